/**
 * A fixed set of worker threads, each with its own QuickJS evaluator, and a
 * bounded queue in front of them. A runaway script occupies one worker (until
 * its fuel runs out); the other workers keep serving the queue.
 *
 * Memory: every worker caps the linear memory of its QuickJS modules at
 * `wasmMemoryBytesMax` and reports, after each job, how much linear memory it
 * still holds (dropped modules included until V8 collects them). A worker
 * holding more than `wasmBytesRetainMax` is terminated — which frees its
 * memory at once — and only then replaced by a fresh one, so an old and a new
 * worker never hold memory together.
 *
 * Call order: `submit` any number of times; `drain` waits for queued and
 * running jobs; `close` terminates the workers.
 */
import { Worker } from 'node:worker_threads';
import type { ScriptOutcome } from '../evaluator.js';
import * as L from '../limits.js';
import type { EvaluateJob } from './protocol.js';
import type { WorkerConfig, WorkerRequest } from './worker.js';
import { CodedError } from '../../engine/protocol/coded-error.js';

export interface WorkerPoolOptions {
  workers: number;
  queueLength: number;
  /** The compiled worker module (default: worker.js next to this file). */
  workerUrl?: URL;
  /** Wall-clock backstop per job; fuel is the real bound. */
  jobMsMax?: number;
  /** Maximum linear memory of one QuickJS module in a worker (default wasmMemoryBytesMax). */
  wasmMemoryBytesMax?: number;
  /** A worker holding more linear memory than this after a job is replaced (default wasmBytesHeldRetainMax). */
  wasmBytesRetainMax?: number;
  /** V8 heap bounds of each worker thread. */
  workerOldGenerationMb?: number;
  workerYoungGenerationMb?: number;
}

export interface WorkerPoolStats {
  queued: number;
  running: number;
  /** Workers started and ready for jobs. */
  ready: number;
  /** Workers marked for replacement, being terminated, or starting. */
  recycling: number;
  /** Workers replaced since the pool started (memory, failures, backstop). */
  replaced: number;
}

export class QueueFullError extends CodedError {
  constructor(message: string) {
    super('service.queue-full', message);
  }
}

interface Job {
  id: number;
  job: EvaluateJob;
  resolve: (outcome: ScriptOutcome) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  running: Job | undefined;
  timer: NodeJS.Timeout | undefined;
  /** Replace this worker as soon as it is idle (memory pressure). */
  recycle: boolean;
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  private readonly workerUrl: URL;
  private readonly jobMsMax: number;
  /** Set when a worker fails before any worker became ready (a missing or broken worker module). */
  private startupError: Error | undefined;
  private everReady = false;
  /** Workers being terminated whose replacement is not started yet. */
  private readonly stopping = new Set<Promise<void>>();
  private replacedCount = 0;
  private readonly workerConfig: WorkerConfig;
  private readonly retainBytes: number;

  constructor(private readonly options: WorkerPoolOptions) {
    if (!Number.isInteger(options.workers) || options.workers < 1 || options.workers > L.serviceWorkersMax) {
      throw new RangeError(`workers must be an integer from 1 to ${L.serviceWorkersMax}`);
    }
    if (!Number.isInteger(options.queueLength) || options.queueLength < 0 || options.queueLength > L.serviceQueueLengthMax) {
      throw new RangeError(`queueLength must be an integer from 0 to ${L.serviceQueueLengthMax}`);
    }
    this.workerUrl = options.workerUrl ?? new URL('./worker.js', import.meta.url);
    this.jobMsMax = options.jobMsMax ?? L.workerEvaluationMsMax;
    this.workerConfig = { wasmMemoryBytesMax: options.wasmMemoryBytesMax ?? L.wasmMemoryBytesMax };
    this.retainBytes = options.wasmBytesRetainMax ?? L.wasmBytesHeldRetainMax;
    for (let i = 0; i < options.workers; i++) this.slots.push(this.spawn());
  }

  /** Resolves once every worker has loaded its evaluator. */
  async ready(): Promise<void> {
    for (;;) {
      if (this.startupError) throw this.startupError;
      if (this.slots.length === this.options.workers && this.slots.every((s) => s.ready)) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  get queued(): number {
    return this.queue.length;
  }

  get running(): number {
    return this.slots.filter((s) => s.running).length;
  }

  stats(): WorkerPoolStats {
    const ready = this.slots.filter((s) => s.ready && !s.recycle).length;
    return {
      queued: this.queue.length,
      running: this.running,
      ready,
      recycling: this.options.workers - ready,
      replaced: this.replacedCount,
    };
  }

  /** Queues a job; throws QueueFullError when every worker is busy and the queue is at its bound. */
  submit(job: EvaluateJob): Promise<ScriptOutcome> {
    if (this.closed) throw new Error('pool is closed');
    const free = this.slots.some((s) => s.ready && !s.running);
    if (!free && this.queue.length >= this.options.queueLength) throw new QueueFullError('evaluation queue is full');
    return new Promise((resolve) => {
      this.queue.push({ id: this.nextId++, job, resolve });
      this.pump();
    });
  }

  /** Marks every worker for replacement once idle, releasing its linear memory. */
  recycleAll(): void {
    for (const slot of this.slots) slot.recycle = true;
    this.pump();
  }

  /** Resolves when no job is queued or running. */
  drain(): Promise<void> {
    if (this.queue.length === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.resolve(workerFailure('the service shut down before this job ran'));
    await Promise.all([...this.slots.map((s) => s.worker.terminate()), ...this.stopping]);
  }

  private spawn(): Slot {
    const worker = new Worker(this.workerUrl, {
      workerData: this.workerConfig,
      resourceLimits: {
        maxOldGenerationSizeMb: this.options.workerOldGenerationMb ?? L.workerHeapMbMax,
        maxYoungGenerationSizeMb: this.options.workerYoungGenerationMb ?? L.workerYoungGenerationMbMax,
      },
    });
    const slot: Slot = { worker, ready: false, running: undefined, timer: undefined, recycle: false };
    worker.on('message', (message: { ready?: true; id?: number; outcome?: ScriptOutcome; wasmBytesHeld?: number }) => {
      if (message.ready) {
        slot.ready = true;
        this.everReady = true;
      } else if (slot.running && message.id === slot.running.id && message.outcome) {
        const job = slot.running;
        this.finish(slot);
        // Grown or dropped modules stay resident until V8 collects them; do not wait for that.
        if ((message.wasmBytesHeld ?? 0) > this.retainBytes) slot.recycle = true;
        job.resolve(message.outcome);
      }
      this.pump();
    });
    worker.on('error', (e) => {
      // A worker that cannot even start would be replaced forever; stop instead.
      if (!this.everReady) this.startupError ??= e instanceof Error ? e : new Error(String(e));
      this.replace(slot, 'the worker failed');
    });
    worker.on('exit', () => this.replace(slot, 'the worker exited'));
    return slot;
  }

  private finish(slot: Slot): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.running = undefined;
  }

  /**
   * Fails the slot's job (if any) and puts a fresh worker in its place once
   * the old one has stopped (its memory is released when it stops).
   */
  private replace(slot: Slot, reason: string): void {
    const index = this.slots.indexOf(slot);
    if (index === -1) return;
    const job = slot.running;
    this.finish(slot);
    this.slots.splice(index, 1);
    this.replacedCount++;
    slot.worker.removeAllListeners();
    slot.worker.on('error', () => {});
    const stopped: Promise<void> = slot.worker.terminate().then(
      () => undefined,
      () => undefined,
    );
    this.stopping.add(stopped);
    void stopped.then(() => {
      this.stopping.delete(stopped);
      if (!this.closed && !this.startupError) this.slots.push(this.spawn());
      this.pump();
    });
    if (job) job.resolve(workerFailure(reason));
    this.pump();
  }

  private pump(): void {
    for (const slot of [...this.slots]) {
      if (slot.recycle && !slot.running && slot.ready && !this.closed) {
        slot.recycle = false;
        this.replace(slot, 'recycled');
      }
    }
    for (const slot of this.slots) {
      if (this.queue.length === 0) break;
      if (!slot.ready || slot.running) continue;
      const job = this.queue.shift()!;
      slot.running = job;
      slot.timer = setTimeout(() => this.replace(slot, `the evaluation ran longer than ${this.jobMsMax} ms`), this.jobMsMax);
      const request: WorkerRequest = { id: job.id, job: job.job };
      slot.worker.postMessage(request);
    }
    if (this.queue.length === 0 && this.running === 0) {
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }
}

function workerFailure(message: string): ScriptOutcome {
  return { ok: false, error: { code: 'service.worker-failure', message } };
}

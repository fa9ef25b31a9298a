/**
 * A fixed set of worker threads, each with its own QuickJS evaluator, and a
 * bounded queue in front of them. A runaway script occupies one worker (until
 * its fuel runs out); the other workers keep serving the queue.
 *
 * Call order: `submit` any number of times; `drain` waits for queued and
 * running jobs; `close` terminates the workers.
 */
import { Worker } from 'node:worker_threads';
import type { ScriptOutcome } from '../evaluator.js';
import * as L from '../limits.js';
import type { EvaluateJob } from './protocol.js';
import type { WorkerRequest } from './worker.js';

export interface WorkerPoolOptions {
  workers: number;
  queueLength: number;
  /** The compiled worker module (default: worker.js next to this file). */
  workerUrl?: URL;
  /** Wall-clock backstop per job; fuel is the real bound. */
  jobMsMax?: number;
}

export class QueueFullError extends Error {
  readonly code = 'service.queue-full';
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

  constructor(private readonly options: WorkerPoolOptions) {
    if (!Number.isInteger(options.workers) || options.workers < 1 || options.workers > L.serviceWorkersMax) {
      throw new RangeError(`workers must be an integer from 1 to ${L.serviceWorkersMax}`);
    }
    if (!Number.isInteger(options.queueLength) || options.queueLength < 0 || options.queueLength > L.serviceQueueLengthMax) {
      throw new RangeError(`queueLength must be an integer from 0 to ${L.serviceQueueLengthMax}`);
    }
    this.workerUrl = options.workerUrl ?? new URL('./worker.js', import.meta.url);
    this.jobMsMax = options.jobMsMax ?? L.workerEvaluationMsMax;
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
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }

  private spawn(): Slot {
    const worker = new Worker(this.workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: L.workerHeapMbMax },
    });
    const slot: Slot = { worker, ready: false, running: undefined, timer: undefined, recycle: false };
    worker.on('message', (message: { ready?: true; id?: number; outcome?: ScriptOutcome }) => {
      if (message.ready) {
        slot.ready = true;
        this.everReady = true;
      } else if (slot.running && message.id === slot.running.id && message.outcome) {
        const job = slot.running;
        this.finish(slot);
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

  /** Fails the slot's job (if any) and puts a fresh worker in its place. */
  private replace(slot: Slot, reason: string): void {
    const index = this.slots.indexOf(slot);
    if (index === -1) return;
    const job = slot.running;
    this.finish(slot);
    this.slots.splice(index, 1);
    slot.worker.removeAllListeners();
    slot.worker.on('error', () => {});
    void slot.worker.terminate();
    if (job) job.resolve(workerFailure(reason));
    if (!this.closed && !this.startupError) this.slots.push(this.spawn());
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

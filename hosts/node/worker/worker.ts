// A worker: claims queued runs and runs whose owner is gone, and runs them in this process, up
// to `maxRuns` owned at once. Any number of workers may share one store (SQLite on one machine,
// PostgreSQL across machines); the store's claim decides who gets what.
//
// Stop order (`stop()`): stop claiming -> let calls in flight finish for up to `drainMs` ->
// abort what is left and give every lease up (the next owner reissues safe calls and surfaces
// the others as needs_attention) -> leave the worker list.
import { PollLoop } from '../../core/poll-loop.js';
import { hostname } from 'node:os';
import type { ClaimedRun } from '../../core/ownership-store.js';
import type { HostLog } from '../../core/types.js';
import type { ExecutionPlan } from '../../core/types.js';
import type { Kernel } from '../../core/kernel.js';
import type { RunOwnership } from '../../core/ownership-store.js';
import type { Authority } from '../../core/types.js';

/** Failures of a start that say nothing about the run itself: its claim is given back, not failed. */
const notRefusals = new Set(['run.fenced', 'run.owned-elsewhere', 'run.exists', 'engine.run-exists', 'engine.trap', 'engine.reviving', 'host.closed']);

export interface WorkerOptions {
  /** Runs owned at once, at most (default 64). */
  maxRuns?: number;
  /** How often the store is asked for work when the last claim found none (default 50 ms). */
  idlePollMs?: number;
  /** How long a graceful stop waits for calls in flight (default 10 s). */
  drainMs?: number;
  /** Send the store's result deliveries from this process too (default true; see `runtime.deliveries`). */
  deliveries?: boolean;
  log?: HostLog;
}

export interface WorkerStats {
  owner: string;
  started: number;
  takenOver: number;
  claimErrors: number;
  /** Claim passes skipped because this process's clock was too far from the store's (`lease.clock-skew`). */
  clockSkewSkips: number;
}

/**
 * What a worker reads and calls: the kernel that runs what it claims, the store's ownership, the
 * runtime's authority and plan lookups, and the delivery sender it starts and stops beside it.
 * The SDK's `open` builds it; a worker never sees the runtime itself.
 */
export interface WorkerHost {
  readonly kernel: Kernel;
  readonly ownership: RunOwnership;
  readonly ownerId: string;
  /** Remembers the launch correlation of a queued run this process starts (its calls' trace ids). */
  startsQueued(runId: string, correlation: unknown): void;
  /** The authority a queued run starts under (its launch's request, resolved now). */
  launchAuthorityOf(runId: string, plan: ExecutionPlan, requested?: Authority): Authority;
  /** The authority a stored run resumes under (`undefined` keeps the run's). */
  authorityOf(runId: string, plan: ExecutionPlan): Authority | undefined;
  planOfRun(runId: string): Promise<ExecutionPlan>;
  /** The sender of the store's delivery outbox, or undefined when this worker sends none. */
  readonly deliveries: { start(): void; stop(): Promise<void> } | undefined;
  /** This worker has stopped: it is no longer woken nor stopped by the runtime's close. */
  stopped(worker: Worker): void;
}

export class Worker {
  private readonly maxRuns: number;
  private readonly idlePollMs: number;
  private readonly drainMs: number;
  private readonly sendsDeliveries: boolean;
  private readonly log: HostLog;
  private readonly claims: PollLoop;
  private unsubscribe: (() => unknown) | undefined;
  private presence: ReturnType<typeof setInterval> | undefined;
  private stopped = false;
  private readonly startedAt = Date.now();
  readonly stats: WorkerStats;

  constructor(
    private readonly runtime: WorkerHost,
    options: WorkerOptions = {},
  ) {
    this.maxRuns = options.maxRuns ?? 64;
    this.idlePollMs = options.idlePollMs ?? 50;
    this.drainMs = options.drainMs ?? 10_000;
    this.sendsDeliveries = options.deliveries !== false && runtime.deliveries !== undefined;
    this.log = options.log ?? (() => undefined);
    this.stats = { owner: runtime.ownerId, started: 0, takenOver: 0, claimErrors: 0, clockSkewSkips: 0 };
    this.claims = new PollLoop(() => this.claimOnce(), this.idlePollMs);
  }

  /** Claimed runs whose first commit has not landed yet (their leases are kept from the claim on). */
  private readonly starting = new Set<string>();

  private get owned(): number {
    let starting = 0;
    for (const runId of this.starting) if (!this.runtime.kernel.leases?.held(runId)) starting += 1;
    return (this.runtime.kernel.leases?.size ?? 0) + starting;
  }

  start(): void {
    const ownership = this.runtime.ownership;
    const beat = () =>
      Promise.resolve(ownership.heartbeatWorker({ owner: this.runtime.ownerId, startedAt: this.startedAt, heartbeatAt: Date.now(), info: `${hostname()} pid ${process.pid}` })).catch((err) =>
        this.log('warn', `worker heartbeat failed: ${(err as Error).message}`),
      );
    void beat();
    this.presence = setInterval(beat, Math.max(50, Math.floor((this.runtime.kernel.leases?.ttlMs ?? 15_000) / 3)));
    // A store that pushes wake-ups (PostgreSQL NOTIFY, SQLite's wake files) lets a queued run start without waiting for a poll.
    if (ownership.subscribe) {
      new Promise<() => unknown>((resolve) =>
        resolve(
          ownership.subscribe!(
            (event) => {
              if (event.channel === 'inbox') void this.runtime.kernel.leases?.poll();
              this.wake();
            },
            {
              lost: (err, retryInMs) => this.log('warn', `wake-up connection to the store lost (${err.message}): polling for work, listening again in ${retryInMs} ms`),
              // At the loss's level, so that whoever saw the loss sees its end.
              restored: () => this.log('warn', 'wake-up connection to the store restored: listening for work again'),
            },
          ),
        ),
      ).then(
        (stop) => (this.stopped ? void stop() : (this.unsubscribe = stop)),
        (err) => this.log('warn', `listening for work failed (polling instead): ${(err as Error).message}`),
      );
    }
    if (this.sendsDeliveries) this.runtime.deliveries!.start();
    this.claims.start();
  }

  /** Claims now rather than at the next poll (work was queued, in this process or, with NOTIFY, anywhere). */
  wake(): void {
    this.claims.wake();
  }

  /** One claim; answers whether it found work. */
  private async claimOnce(): Promise<boolean> {
    const room = this.maxRuns - this.owned;
    if (room <= 0 || this.stopped) return false;
    const leases = this.runtime.kernel.leases!;
    // A clock too far from the store's claims nothing (logged by the lease keeper when found).
    if (leases.clockRefusal()) {
      this.stats.clockSkewSkips += 1;
      return false;
    }
    let claimed: ClaimedRun[];
    let claimedAt: number;
    try {
      claimedAt = this.runtime.kernel.now();
      claimed = await this.runtime.ownership.claim(this.runtime.ownerId, Math.min(room, 32), leases.ttlMs, claimedAt);
    } catch (err) {
      this.stats.claimErrors += 1;
      this.log('warn', `claiming work failed: ${(err as Error).message}`);
      return false;
    }
    for (const c of claimed) {
      // The lease is renewed by heartbeat from the claim on, not from the run's first commit.
      leases.committed(c.runId, c.epoch, claimedAt);
      void this.run(c);
    }
    return claimed.length > 0;
  }

  private async run(c: ClaimedRun): Promise<void> {
    const kernel = this.runtime.kernel;
    try {
      if (c.kind === 'start' && c.launch) {
        this.stats.started += 1;
        this.starting.add(c.runId);
        const plan = JSON.parse(new TextDecoder().decode(c.launch.plan)) as ExecutionPlan;
        this.runtime.startsQueued(c.runId, c.launch.correlation);
        await kernel.launch({
          runId: c.runId,
          plan,
          templateKey: c.launch.templateKey,
          input: c.launch.input,
          // The authority is resolved again when the run starts, not when it was queued; the
          // resolver sees what the launch asked for (a trigger binding's authority reference).
          authority: this.runtime.launchAuthorityOf(c.runId, plan, c.launch.authority),
          ...(c.launch.timeoutMs !== undefined ? { timeoutMs: c.launch.timeoutMs } : {}),
          ...(c.launch.correlation !== undefined ? { correlation: c.launch.correlation } : {}),
          actor: c.launch.actor ?? 'worker',
          epoch: c.epoch,
          ...(typeof c.launch.queuedAt === 'number' ? { queuedAt: c.launch.queuedAt } : {}),
        });
      } else {
        this.stats.takenOver += 1;
        kernel.claimed(c.runId, c.epoch);
        // Commands waiting in its inbox (each resumes the run under the authority of now), or a resume.
        if ((await kernel.leases!.applyPending(c.runId)) === 0) {
          const plan = await this.runtime.planOfRun(c.runId);
          await kernel.resume(c.runId, 'worker', this.runtime.authorityOf(c.runId, plan));
        }
      }
    } catch (err) {
      const e = err as { code?: string; message?: string };
      const code = e.code ?? 'worker.error';
      this.log('warn', `run ${c.runId} (${c.kind}) failed to start here: ${code} ${e.message ?? String(err)}`);
      const ownership = this.runtime.ownership;
      const lease = { owner: this.runtime.ownerId, epoch: c.epoch };
      kernel.leases?.drop(c.runId);
      if (c.kind === 'start' && !notRefusals.has(code) && !code.startsWith('store.')) {
        // The engine refused the launch request itself: no worker can start it, so it fails now.
        await Promise.resolve(ownership.refuseQueued(c.runId, lease, { code, message: e.message ?? String(err) }, kernel.now())).catch(() => undefined);
      } else {
        // Not this run's fault: give the claim back for another try.
        await Promise.resolve(ownership.releaseLease(c.runId, lease.owner, lease.epoch)).catch(() => undefined);
      }
    } finally {
      this.starting.delete(c.runId);
    }
  }

  /** Graceful stop: no new claims, calls in flight finish (or are handed back at `drainMs`). */
  async stop(options: { /** How long calls in flight may finish (default: the worker's `drainMs`). */ drainMs?: number } = {}): Promise<{ drained: boolean }> {
    this.stopped = true;
    if (this.presence) clearInterval(this.presence);
    await this.claims.stop();
    await Promise.resolve(this.unsubscribe?.()).catch(() => undefined);
    const drained = await this.runtime.kernel.drain(options.drainMs ?? this.drainMs);
    if (this.sendsDeliveries) await this.runtime.deliveries!.stop();
    await Promise.resolve(this.runtime.ownership.removeWorker(this.runtime.ownerId)).catch(() => undefined);
    this.runtime.stopped(this);
    return { drained };
  }
}

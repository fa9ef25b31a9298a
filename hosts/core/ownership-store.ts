/**
 * Run ownership: what a store shared by several processes adds to the journal contract.
 *
 * - **Leases.** A run is owned through a lease: `owner` (a process's owner id), `epoch` (the
 *   fencing token, +1 on every acquisition) and `expiresAt` (host clock, ms). Acquiring is
 *   conditional: the lease is free, expired, or already held by the same owner. The owner renews
 *   its leases by heartbeat and gives them up in its commits (`releaseLease`) or on a graceful
 *   stop. Every commit names the lease it was staged under; the store refuses it (`store.fenced`)
 *   unless that lease is the run's current one, in the same transaction as `expectedSeq`.
 * - **Inbox.** Approve, reject, resolve, cancel and resume requests from any process are
 *   committed as commands on the run's inbox. The owner applies them in order; the commit of the
 *   activation that applied a command marks it applied (`CommitEntry.appliedCommands`), so a
 *   command is applied once. A command the engine refuses is marked with its error.
 * - **Queue.** A background launch commits the run as `queued` with its launch request. Workers
 *   claim queued runs (in FIFO order, at most `concurrencyLimit` active runs per
 *   `concurrencyKey`), and runs that need an owner and have none: a lease that expired or was
 *   handed back while work was in flight, or commands waiting in the inbox of a run without a
 *   live owner.
 *
 * Times are the host clock of the calling process, passed in (`now`) so that tests and the
 * simulator control them; a store never reads a clock of its own for these decisions.
 */
import type { Awaitable } from './store.js';
import type { Authority } from './types.js';
import type { DeliveryTarget } from './delivery-outbox.js';

/** The result of trying to take a run's lease. */
export type LeaseGrant =
  | { ok: true; epoch: number; /** The epoch before this acquisition (0: never owned). */ previousEpoch: number; previousOwner?: string }
  | { ok: false; code: 'lease.held' | 'run.not-found' | 'run.terminal' | 'lease.clock-skew'; holder?: { owner: string; epoch: number; expiresAt: number }; message: string };

/** A command waiting in a run's inbox. */
export interface InboxCommand {
  /** Store-assigned, ascending per store: the order the owner applies commands in. */
  id: number;
  runId: string;
  command: OperatorCommand;
  postedAt: number;
}

/** What an operator (or another process) asks of a run. */
export type OperatorCommand =
  | { type: 'approve'; nodeId: string; invocationId: string; approved: boolean; by: string; comment?: string }
  | { type: 'resolve'; nodeId: string; item?: number; resolution: 'succeeded' | 'retry' | 'fail'; output?: unknown; reason?: string; by: string; attentionSeq?: number }
  | { type: 'cancel'; reason: string; by: string }
  | { type: 'resume'; by: string }
  /** The outcome of a call that reached a process after it lost the run: evidence only. */
  | { type: 'late-outcome'; invocationId: string; ok: boolean; output?: unknown; error?: { code: string; message: string; retryable?: boolean }; by: string };

/** A command once applied (or refused). */
export interface CommandResult {
  id: number;
  runId: string;
  state: 'pending' | 'applied' | 'refused';
  appliedAt?: number;
  /** Who applied it (owner id). */
  appliedBy?: string;
  error?: { code: string; message: string };
}

/** What a background launch records; a worker launches the run from it. */
export interface QueuedLaunch {
  runId: string;
  /** The pinned execution plan, JSON. */
  plan: Uint8Array;
  templateKey: string;
  input: unknown;
  authority: Authority;
  timeoutMs?: number;
  correlation?: unknown;
  actor?: string;
  concurrencyKey?: string;
  /** When the store queued it (ms since the epoch; set by the store, journaled as `run.queued`). */
  queuedAt?: number;
  /** At most this many runs of `concurrencyKey` are active at once (default 1). */
  concurrencyLimit?: number;
  /** Deduplicates launches: a second launch with the same key returns the first run's id. */
  idempotencyKey?: string;
  /** Where the run's results are delivered (kept with the run, not in the launch request). */
  delivery?: { target: DeliveryTarget; digest: string };
}

/** A run a worker now owns: a queued run to start, or a run to take over. */
export interface ClaimedRun {
  runId: string;
  epoch: number;
  /** `start`: a queued run never activated (launch it from `launch`); `takeover`: resume it. */
  kind: 'start' | 'takeover';
  launch?: Omit<QueuedLaunch, 'plan'> & { plan: Uint8Array };
}

/**
 * What a store that pushes wake-ups over a connection says about that connection: it was lost
 * (and is tried again in `retryInMs`), or it listens again. Wake-ups missed meanwhile are made
 * up by one wake-up of each channel after the restore, and by polling.
 */
export interface SubscriptionEvents {
  lost?(err: Error, retryInMs: number): void;
  restored?(): void;
}

export interface WorkerRecord {
  owner: string;
  startedAt: number;
  heartbeatAt: number;
  /** Free text: host name, pid, version. */
  info?: string;
}

export interface RunOwnership {
  /** Takes the lease when it is free, expired or this owner's own (renewing it). */
  acquireLease(runId: string, owner: string, ttlMs: number, now: number): Awaitable<LeaseGrant>;
  /**
   * Extends every lease of `owner` named in `leases` (run id -> epoch) to `now + ttlMs`; answers
   * the run ids whose lease this owner no longer holds (taken over after it expired).
   */
  renewLeases(owner: string, leases: ReadonlyMap<string, number>, ttlMs: number, now: number): Awaitable<string[]>;
  /** Gives a lease up (no-op when the owner no longer holds that epoch). */
  releaseLease(runId: string, owner: string, epoch: number): Awaitable<void>;

  /** Commits a command to a run's inbox; answers its id. `run.not-found` for an unknown run. */
  postCommand(runId: string, command: OperatorCommand, now: number): Awaitable<number>;
  /** Commands not yet applied, in order, of the given runs (at most `limit`). */
  pendingCommands(runIds: readonly string[], limit: number): Awaitable<InboxCommand[]>;
  /** Marks commands refused by the engine, with the error (outside any run commit). */
  refuseCommands(refusals: readonly { id: number; error: { code: string; message: string } }[], owner: string, now: number): Awaitable<void>;
  commandResult(id: number): Awaitable<CommandResult | undefined>;

  /**
   * Commits a queued run (status `queued`, no events) with what starting it needs. With an
   * `idempotencyKey` already used, commits nothing and answers the existing run's id.
   */
  enqueue(launch: QueuedLaunch, now: number): Awaitable<{ runId: string; created: boolean }>;
  /** Takes up to `limit` runs for `owner` (see the module comment for which), each with a lease. */
  claim(owner: string, limit: number, ttlMs: number, now: number): Awaitable<ClaimedRun[]>;
  /** The launch request of a queued run (for a process that starts it itself). */
  queuedLaunch(runId: string): Awaitable<QueuedLaunch | undefined>;
  /** Cancels a queued run that never started: it becomes `cancelled` without events. */
  cancelQueued(runId: string, reason: string, by: string, now: number): Awaitable<boolean>;
  /**
   * Fails a queued run the engine refused to start (its input does not match the template, say),
   * as the holder of its claim: it becomes `failed` without events, with `error` as its outcome.
   */
  refuseQueued(runId: string, lease: { owner: string; epoch: number }, error: { code: string; message: string }, now: number): Awaitable<boolean>;

  /**
   * Wake-ups, for stores that can push them (PostgreSQL's LISTEN/NOTIFY, SQLite's wake files):
   * `listener` is called when a run is queued (`queue`) or a command posted (`inbox`), in any
   * process; `runId` when the store says which. Answers the function that stops listening.
   * Without it, workers and owners poll (and they keep polling as a fallback).
   */
  subscribe?(listener: (event: { channel: 'queue' | 'inbox'; runId?: string }) => void, events?: SubscriptionEvents): Awaitable<() => Awaitable<void>>;

  /**
   * The store's own clock (ms since the epoch), for a store that processes on several machines
   * share (PostgreSQL): a lease's expiry is written by one machine's clock and read by another's,
   * so each process checks its clock against this one (`LeaseKeeper.checkClock`). A store on one
   * machine (SQLite) has none: its processes share the clock.
   */
  serverTime?(): Awaitable<number>;

  /** Worker presence, so `--no-wait` can say whether anyone will run the queue. */
  heartbeatWorker(record: WorkerRecord): Awaitable<void>;
  removeWorker(owner: string): Awaitable<void>;
  liveWorkers(now: number, staleMs: number): Awaitable<WorkerRecord[]>;
}

/**
 * The storage contract every host implements behind the WIT `journal` import.
 *
 * The journal is the only authority for a run. A store keeps, per run: the pinned plan (written
 * once, with the run's first commit), the gap-free sequence of events, and the latest checkpoint.
 * Everything else a store keeps (status, outcome, timestamps) is a projection that can be rebuilt.
 *
 * Methods may answer synchronously (SQLite, the router's file journal, an imported journal) or
 * with a promise (PostgreSQL); callers that serve every store `await` them.
 *
 * A store shared by several processes also implements `RunOwnership` (leases with a fencing
 * epoch, a per-run inbox of operator commands, the queue of background runs): see
 * `ownership-store.ts`.
 */
import { portableIdPattern, portableIdSource } from '../../engine/protocol/ids.js';
import type { RunOwnership } from './ownership-store.js';
import type { DeliveryOutbox, DeliveryTarget } from './delivery-outbox.js';
import type { RunProjection } from './types.js';
import { CodedError } from '../../engine/protocol/coded-error.js';

export type Awaitable<T> = T | Promise<T>;

/** One atomic commit of one activation of one run (mirrors the WIT `commit-request`). */
export interface CommitEntry {
  runId: string;
  /** Last seq the engine saw committed; the store refuses the entry when it differs. */
  expectedSeq: number;
  /** Seq of the last event in `events`. */
  lastSeq: number;
  /** New events, UTF-8 JSON, one per line, seq `expectedSeq + 1 ..= lastSeq`. */
  events: Uint8Array;
  /** Snapshot of the run state as of `lastSeq`, when the engine took one. */
  checkpoint?: Uint8Array;
  /** The pinned execution plan; present on a run's first commit only. */
  plan?: Uint8Array;
  /**
   * Where the run's results are delivered, with its digest; on a run's first commit only (a
   * queued run got it when it was queued). A store with a `DeliveryOutbox` keeps it with the run.
   */
  delivery?: { target: DeliveryTarget; digest: string };
  /** Run status after this commit (projection). */
  status: string;
  /**
   * Fencing: the lease under which the entry was staged. A store with `RunOwnership` refuses the
   * entry (`store.fenced`) unless the run's current lease has this owner and epoch, in the same
   * transaction as the `expectedSeq` check. A run's first commit creates its lease with it.
   */
  lease?: { owner: string; epoch: number; /** For a run's first commit: when the new lease expires. */ expiresAt?: number };
  /** Give the lease up in the same transaction (the run ended, or rests with nothing in flight). */
  releaseLease?: boolean;
  /** Inbox commands this activation applied; marked applied in the same transaction. */
  appliedCommands?: readonly number[];
  /**
   * The run's projection after this commit (from the engine's summary; no result of a `metadata`
   * run), kept beside the status so nobody re-reads events. `wakeAt` is also kept on its own
   * where a store selects runs by it.
   */
  outcome?: RunProjection;
}

/** What a cold activation needs to rebuild a run (mirrors the WIT `run-tail`). */
export interface RunTail {
  plan: Uint8Array;
  checkpoint?: Uint8Array;
  /** Events after the checkpoint, UTF-8 JSON, one per line. */
  events: Uint8Array;
  lastSeq: number;
}

/**
 * Which runs the Node host's stores list, newest first (created_at, then run id, descending), for
 * the console's paged list (hosts/node/stores/bundle.ts `NodeJournalStore`). `before` is a page's
 * cursor: the last run of the previous page, so pages stay stable while runs are added.
 */
export interface RunListFilter {
  statuses?: readonly string[];
  limit?: number;
  before?: { createdAt: number; runId: string };
  /** Created at or after (ms since the epoch). */
  createdFrom?: number;
  /** Created before (ms since the epoch). */
  createdTo?: number;
  runIdPrefix?: string;
  /**
   * The root template the run was planned from: `<id>@<revision>` (`<id>@inline` for a template
   * given inline) exactly, or `<id>` for any revision of it (the plan's `root`).
   */
  template?: string;
  /**
   * Where the run came from: `trigger` (launched by a binding's event), `direct` (any other
   * launch), or the binding that launched it, `{ bindingId, bindingRevision? }`.
   */
  origin?: 'trigger' | 'direct' | { bindingId: string; bindingRevision?: number };
  /** Paused runs waiting for a person: an approval or a node that needs attention. */
  pausedReason?: 'approval' | 'needs_attention';
  /**
   * A run id prefix, the source event id (a webhook's event id, a cron slot) of the trigger event
   * that launched the run, or (three characters or more) text in the correlation the launch
   * recorded (its origin, delivery, traceparent): runs matching any.
   */
  search?: string;
}

export interface RunRecord {
  runId: string;
  status: string;
  lastSeq: number;
  /** Milliseconds since the epoch, host clock; projections only. */
  createdAt: number;
  updatedAt: number;
  /**
   * The projection of the last commit. Absent for a run recorded before the store kept whole
   * projections: the kernel derives it once from the journal (`keepProjection`).
   */
  outcome?: RunProjection;
  /** The current lease (stores with `RunOwnership`); `owner` is absent when it is free. */
  lease?: { owner?: string; epoch: number; expiresAt?: number };
  /** For a queued run: why it waits (`queued`, or `concurrency <key>: N of N active`). */
  waitReason?: string;
  concurrencyKey?: string;
}

export interface CommitRejection {
  runId: string;
  /** `store.conflict`: `expectedSeq` differs; `store.fenced`: the entry's lease is not the run's current one. */
  code: 'store.conflict' | 'store.fenced';
  message: string;
}

export interface EventPage {
  /** Events as JSON text, ascending seq. */
  events: string[];
  /** Seq of the last event returned, or `afterSeq` when the page is empty. */
  lastSeq: number;
  /** True when more events follow this page. */
  more: boolean;
}

/** A content-addressed artifact: the bytes of a large capability payload, stored once. */
export interface ArtifactRef {
  /** `sha256:<hex>` of the bytes. */
  digest: string;
  size: number;
}

/** The contract in its synchronous form (SQLite, the router's file journal, an imported journal). */
export interface SyncJournalStore {
  /** Stores bytes once under their digest (idempotent). A store without it captures nothing. */
  putArtifact?(bytes: Uint8Array, mediaType: string): ArtifactRef;
  /** The bytes of an artifact, verified against the digest; `undefined` when not stored. */
  getArtifact?(digest: string): (ArtifactRef & { bytes: Uint8Array; mediaType?: string }) | undefined;
  /**
   * Makes several entries durable in one transaction (group commit). An entry whose
   * `expectedSeq` differs from the stored last seq is rejected and reported; the others are
   * committed. Throws `StoreError` (code `store.io`) when nothing could be written.
   */
  commit(entries: readonly CommitEntry[]): CommitRejection[];
  /** Plan, latest checkpoint and the events after it; `undefined` for an unknown run (or a queued one that never started). */
  load(runId: string): RunTail | undefined;
  /** A page of events with seq > `afterSeq`, at most `limit` of them. */
  readEvents(runId: string, afterSeq: number, limit: number): EventPage;
  getRun(runId: string): RunRecord | undefined;
  /** Runs, newest first, optionally only those with one of `statuses`. */
  listRuns(filter?: { statuses?: readonly string[]; limit?: number }): RunRecord[];
  /**
   * Keeps a projection derived from the journal of a run recorded without one, unless the run
   * moved past `lastSeq` meanwhile (then its own commit carried a newer one).
   */
  keepProjection?(runId: string, lastSeq: number, projection: RunProjection): void;
  close(): void;
}

/** The contract as the shared host code uses it: every answer may be a promise. */
export interface JournalStore {
  putArtifact?(bytes: Uint8Array, mediaType: string): Awaitable<ArtifactRef>;
  getArtifact?(digest: string): Awaitable<(ArtifactRef & { bytes: Uint8Array; mediaType?: string }) | undefined>;
  commit(entries: readonly CommitEntry[]): Awaitable<CommitRejection[]>;
  load(runId: string): Awaitable<RunTail | undefined>;
  /**
   * `load` answered synchronously, when the store can (the engine's `load` import is synchronous;
   * for a store without it the kernel loads a cold run's tail before activating it).
   */
  loadSync?(runId: string): RunTail | undefined;
  readEvents(runId: string, afterSeq: number, limit: number): Awaitable<EventPage>;
  getRun(runId: string): Awaitable<RunRecord | undefined>;
  listRuns(filter?: { statuses?: readonly string[]; limit?: number }): Awaitable<RunRecord[]>;
  keepProjection?(runId: string, lastSeq: number, projection: RunProjection): Awaitable<void>;
  /**
   * Commit notifications, for stores that can push them (PostgreSQL's LISTEN/NOTIFY): `listener`
   * gets the run id and last seq of each commit of any process, after it is durable; `onLost` is
   * called if the notifications stop. Resolves with a function that stops listening. Without it,
   * followers of runs of other processes read the run records on a timer.
   */
  subscribeCommits?(listener: (runId: string, lastSeq: number) => void, onLost?: (err: Error) => void): Awaitable<() => Awaitable<void>>;
  close(): Awaitable<void>;
  /** Leases, inbox and queue, for stores that several processes share. */
  readonly ownership?: RunOwnership;
  /** The outbox of result deliveries, for stores that keep one. */
  readonly deliveries?: DeliveryOutbox;
}

/** A storage failure with a stable code. */
export class StoreError extends CodedError {
  declare readonly code: 'store.io' | 'store.corrupt' | 'store.truncated' | 'store.conflict' | 'store.fenced' | 'store.not-found' | 'store.schema-too-new' | 'store.bad-id' | 'store.not-loaded' | 'store.not-a-store';

  constructor(code: StoreError['code'], message: string) {
    super(code, message);
    this.name = 'StoreError';
  }
}

/** Portable identifiers: run ids, node ids, invocation ids, file names. */
export { portableIdPattern };

export function assertPortableId(id: string, what: string): void {
  if (typeof id !== 'string' || !portableIdPattern.test(id)) {
    throw new StoreError('store.bad-id', `${what} ${JSON.stringify(id)} is not a portable id (${portableIdSource})`);
  }
}

/**
 * The storage contract every host implements behind the WIT `journal` import.
 *
 * The journal is the only authority for a run. A store keeps, per run: the pinned plan (written
 * once, with the run's first commit), the gap-free sequence of events, and the latest checkpoint.
 * Everything else a store keeps (status, timestamps) is a projection that can be rebuilt.
 */

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
  /** Run status after this commit (projection). */
  status: string;
}

/** What a cold activation needs to rebuild a run (mirrors the WIT `run-tail`). */
export interface RunTail {
  plan: Uint8Array;
  checkpoint?: Uint8Array;
  /** Events after the checkpoint, UTF-8 JSON, one per line. */
  events: Uint8Array;
  lastSeq: number;
}

export interface RunRecord {
  runId: string;
  status: string;
  lastSeq: number;
  /** Milliseconds since the epoch, host clock; projections only. */
  createdAt: number;
  updatedAt: number;
}

export interface CommitRejection {
  runId: string;
  code: 'store.conflict';
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

export interface JournalStore {
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
  /** Plan, latest checkpoint and the events after it; `undefined` for an unknown run. */
  load(runId: string): RunTail | undefined;
  /** A page of events with seq > `afterSeq`, at most `limit` of them. */
  readEvents(runId: string, afterSeq: number, limit: number): EventPage;
  getRun(runId: string): RunRecord | undefined;
  /** Runs, newest first, optionally only those with one of `statuses`. */
  listRuns(filter?: { statuses?: readonly string[]; limit?: number }): RunRecord[];
  close(): void;
}

/** A storage failure with a stable code. */
export class StoreError extends Error {
  constructor(
    readonly code: 'store.io' | 'store.corrupt' | 'store.conflict' | 'store.not-found' | 'store.schema-too-new' | 'store.bad-id',
    message: string,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}

/** Portable identifiers: run ids, node ids, invocation ids, file names. */
export const portableIdPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,35}$/;

export function assertPortableId(id: string, what: string): void {
  if (typeof id !== 'string' || !portableIdPattern.test(id)) {
    throw new StoreError('store.bad-id', `${what} ${JSON.stringify(id)} is not a portable id ([A-Za-z0-9][A-Za-z0-9._:-]{0,35})`);
  }
}

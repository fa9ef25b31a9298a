/**
 * The in-memory index of a journal file, built by one scan on open and kept up to date by
 * commits. Per run it holds where the plan, the latest checkpoint and every batch of events lie
 * in the file, so `load` reads only the checkpoint and the batches after it.
 *
 * Replaying records re-checks the invariants the writer enforced (plan first, gap-free seqs);
 * a file that breaks one is `store.corrupt`, with the offending record's offset.
 */
import { StoreError, type RunRecord } from '../core/store.js';
import {
  decodeCommit,
  decodeEvents,
  decodeSnapshot,
  recordType,
  type DecodedEntry,
  type FileSlice,
} from './journal-codec.js';
import type { ScannedRecord } from './record-file.js';

/** Consecutive events `firstSeq ..= lastSeq` of one run, stored contiguously in the file. */
export interface EventSegment extends FileSlice {
  firstSeq: number;
  lastSeq: number;
}

export interface RunIndex {
  runId: string;
  status: string;
  createdAt: number;
  updatedAt: number;
  /** Seq of the last event indexed so far. */
  lastSeq: number;
  plan: FileSlice;
  checkpoint?: FileSlice;
  /** Seq the checkpoint was taken at; 0 without a checkpoint. */
  checkpointSeq: number;
  /** Every event of the run, in seq order, without gaps. */
  segments: EventSegment[];
  /** Creation order, to list runs newest first when clocks tie. */
  ordinal: number;
  /** Set by a `run-snapshot` record: the seq its `events` records must reach. */
  snapshotLastSeq?: number;
  /**
   * The run's projection after its last entry: where it lies in the file, or its JSON bytes when
   * it is not in the file (derived for a run recorded without one, or kept by a version-1 file).
   * Absent when unknown.
   */
  projection?: FileSlice | Uint8Array;
}

export class JournalIndex {
  readonly runs = new Map<string, RunIndex>();
  private nextOrdinal = 0;

  /** Applies one scanned record; throws `store.corrupt` when it breaks an invariant. */
  applyRecord(record: ScannedRecord): void {
    switch (record.type) {
      case recordType.commit: {
        const commit = decodeCommit(record.payload, record.payloadOffset);
        for (const entry of commit.entries) {
          const problem = this.checkEntry(entry);
          if (problem) throw corrupt(record.offset, `entry for run ${entry.runId}: ${problem}`);
          this.applyEntry(entry, commit.committedAt);
        }
        return;
      }
      case recordType.runSnapshot: {
        const s = decodeSnapshot(record.payload, record.payloadOffset);
        if (this.runs.has(s.runId)) throw corrupt(record.offset, `second snapshot of run ${s.runId}`);
        if (s.checkpointSeq > s.lastSeq || (s.checkpoint === undefined && s.checkpointSeq !== 0)) {
          throw corrupt(record.offset, `snapshot of run ${s.runId} has checkpoint seq ${s.checkpointSeq} > ${s.lastSeq}`);
        }
        const run = this.addRun(s.runId, s.status, s.createdAt, s.plan);
        run.updatedAt = s.updatedAt;
        run.snapshotLastSeq = s.lastSeq;
        run.checkpointSeq = s.checkpointSeq;
        if (s.checkpoint) run.checkpoint = s.checkpoint;
        if (s.projection) run.projection = s.projection;
        return;
      }
      case recordType.events: {
        const e = decodeEvents(record.payload, record.payloadOffset);
        const run = this.runs.get(e.runId);
        if (run?.snapshotLastSeq === undefined) throw corrupt(record.offset, `events of run ${e.runId} without its snapshot`);
        if (e.firstSeq !== run.lastSeq + 1 || e.lastSeq < e.firstSeq || e.lastSeq > run.snapshotLastSeq) {
          throw corrupt(record.offset, `events ${e.firstSeq}..${e.lastSeq} of run ${e.runId} do not follow seq ${run.lastSeq}`);
        }
        run.segments.push({ ...e.events, firstSeq: e.firstSeq, lastSeq: e.lastSeq });
        run.lastSeq = e.lastSeq;
        if (run.lastSeq === run.snapshotLastSeq) delete run.snapshotLastSeq;
        return;
      }
      default:
        throw corrupt(record.offset, `unknown record type ${record.type}`);
    }
  }

  /** After the last record: every snapshot must have received all of its events. */
  finish(): void {
    for (const run of this.runs.values()) {
      if (run.snapshotLastSeq !== undefined && run.lastSeq !== run.snapshotLastSeq) {
        throw new StoreError('store.corrupt', `run ${run.runId}: snapshot promises seq ${run.snapshotLastSeq}, events reach ${run.lastSeq}`);
      }
    }
  }

  /** Why an entry cannot follow the indexed state (compare-and-set), or `undefined`. */
  checkEntry(entry: { runId: string; expectedSeq: number; plan?: unknown }, lastSeqOverride?: number): string | undefined {
    const run = this.runs.get(entry.runId);
    if (entry.plan !== undefined) {
      if (run || lastSeqOverride !== undefined) return 'run already exists';
      if (entry.expectedSeq !== 0) return `a new run expects seq 0, not ${entry.expectedSeq}`;
      return undefined;
    }
    const stored = lastSeqOverride ?? run?.lastSeq;
    if (stored === undefined) return 'unknown run';
    if (stored !== entry.expectedSeq) return `expected seq ${entry.expectedSeq}, stored seq is ${stored}`;
    return undefined;
  }

  /** Applies an entry already checked by `checkEntry`. */
  applyEntry(entry: DecodedEntry, committedAt: number): void {
    const run = entry.plan ? this.addRun(entry.runId, entry.status, committedAt, entry.plan) : this.runs.get(entry.runId)!;
    if (entry.lastSeq > entry.expectedSeq) {
      run.segments.push({ ...entry.events, firstSeq: entry.expectedSeq + 1, lastSeq: entry.lastSeq });
    }
    if (entry.checkpoint) {
      run.checkpoint = entry.checkpoint;
      run.checkpointSeq = entry.lastSeq;
    }
    run.lastSeq = entry.lastSeq;
    run.status = entry.status;
    run.updatedAt = committedAt;
    if (entry.projection) run.projection = entry.projection;
    else delete run.projection;
  }

  private addRun(runId: string, status: string, createdAt: number, plan: FileSlice): RunIndex {
    const run: RunIndex = {
      runId,
      status,
      createdAt,
      updatedAt: createdAt,
      lastSeq: 0,
      plan,
      checkpointSeq: 0,
      segments: [],
      ordinal: this.nextOrdinal++,
    };
    this.runs.set(runId, run);
    return run;
  }
}

/** A run's record; `read` reads its projection from the file. */
export function toRunRecord(run: RunIndex, read: (slice: FileSlice) => Uint8Array): RunRecord {
  const record: RunRecord = { runId: run.runId, status: run.status, lastSeq: run.lastSeq, createdAt: run.createdAt, updatedAt: run.updatedAt };
  if (run.projection) {
    const bytes = run.projection instanceof Uint8Array ? run.projection : read(run.projection);
    record.outcome = JSON.parse(new TextDecoder().decode(bytes));
  }
  return record;
}

/** Index of the first segment whose `lastSeq` is greater than `seq` (segments are sorted). */
export function firstSegmentAfter(segments: readonly EventSegment[], seq: number): number {
  let lo = 0;
  let hi = segments.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (segments[mid]!.lastSeq > seq) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function corrupt(offset: number, message: string): StoreError {
  return new StoreError('store.corrupt', `journal record at offset ${offset}: ${message}`);
}

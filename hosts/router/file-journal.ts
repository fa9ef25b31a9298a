/**
 * `FileJournalStore`: the router host's `JournalStore`, an append-only checksummed file per state
 * directory (format in record-file.ts and journal-codec.ts, overview in docs/router.md).
 *
 * Call order: `FileJournalStore.open(dir)` scans the file once (cutting off a torn tail) and
 * builds the index; then any number of `commit`/`load`/`readEvents`/`getRun`/`listRuns`, with
 * `compact()` when `compactionDue()` says so; then `close()`. Everything is synchronous: the
 * engine's commit must be durable before its gateway work starts.
 *
 * State directory:
 *   journal.log               the journal
 *   journal.log.mark          its high-water mark (high-water-mark.ts)
 *   journal.log.compact.tmp   a compaction in progress (removed on open: the old file stands)
 *   LOCK                      the owning process's identity
 *   artifacts/                content-addressed artifacts
 */
import { terminalRunStatuses } from '../../engine/protocol/statuses.js';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  assertPortableId,
  StoreError,
  type CommitEntry,
  type CommitRejection,
  type EventPage,
  type JournalStore,
  type RunRecord,
  type RunTail,
} from '../core/store.js';
import type { RunProjection } from '../core/types.js';
import { ArtifactStore, type Artifact, type ArtifactRef } from './artifacts.js';
import { writeCompactedJournal, type CompactionReport } from './compaction.js';
import { eventStrings, normalizeEvents, offsetOfSeq } from './event-lines.js';
import { encodeCommit, recordType, type NormalizedEntry } from './journal-codec.js';
import { firstSegmentAfter, JournalIndex, toRunRecord } from './journal-index.js';
import {
  checkpointBytesMax,
  commitEntriesMax,
  compactAfterBytes,
  listRunsLimitMax,
  planBytesMax,
  readEventsLimitMax,
  recordBytesMax,
  statusBytesMax,
} from './limits.js';
import {
  appendDurable,
  createRecordFile,
  encodeRecord,
  FatalIoError,
  fsyncDir,
  openRecordFile,
  readFully,
  recordHeaderBytes,
  type RecordFileKind,
  type StorageLoss,
} from './record-file.js';
import { acquireStateLock, type StateLock } from './state-lock.js';
import { assertStateDirOf } from '../shared/state-dir.js';
import { HighWaterMark, markPointAt, type MarkPoint } from './high-water-mark.js';

/** Version 2: entries and snapshots may carry the run's projection (journal-codec.ts). */
export const journalFileKind: RecordFileKind = { magic: 'ADWJRNL\n', version: 2 };
export const journalFileName = 'journal.log';
export const compactTempFileName = 'journal.log.compact.tmp';
export const defaultTerminalStatuses: readonly string[] = terminalRunStatuses;

export interface FileJournalOptions {
  /** Host clock for the `createdAt`/`updatedAt` projections; milliseconds since the epoch. */
  clock?: () => number;
  /** Statuses after which a run never changes again; compaction packs such runs tighter. */
  terminalStatuses?: readonly string[];
  /** Told how long each group commit took (write + fdatasync), in milliseconds, for the host's statistics. */
  observeCommit?: (durationMs: number) => void;
  /**
   * Open a journal that lost acknowledged records (truncated, damaged before its end, missing)
   * by cutting it back to its intact records, instead of refusing with `store.truncated` /
   * `store.corrupt`. The loss is reported in `openReport.loss`.
   */
  acceptLoss?: boolean;
}

export interface OpenReport {
  /** Records found intact. */
  records: number;
  /** Bytes of a torn tail cut off the journal (0 after a clean shutdown). */
  droppedTailBytes: number;
  /** Leftovers of an interrupted compaction that were removed. */
  removedTempFiles: string[];
  runs: number;
  /** Acknowledged records that were lost and accepted as lost (`acceptLoss`). */
  loss?: StorageLoss;
}

export class FileJournalStore implements JournalStore {
  /** What `open` found and repaired. */
  readonly openReport: OpenReport;
  private readonly file: string;
  private readonly clock: () => number;
  private readonly observeCommit: ((durationMs: number) => void) | undefined;
  private readonly terminal: ReadonlySet<string>;
  private readonly artifacts: ArtifactStore;
  private readonly mark: HighWaterMark;
  private fd: number;
  private end: number;
  /** Format version of the open file: a version-1 file gets no projection until compaction rewrites it. */
  private version: number;
  private index: JournalIndex;
  private bytesAtLastCompaction: number;
  private failure: StoreError | undefined;
  private closed = false;

  private constructor(
    readonly dir: string,
    private readonly lock: StateLock,
    options: FileJournalOptions,
  ) {
    this.file = path.join(dir, journalFileName);
    this.clock = options.clock ?? Date.now;
    this.observeCommit = options.observeCommit;
    this.terminal = new Set(options.terminalStatuses ?? defaultTerminalStatuses);
    this.artifacts = new ArtifactStore(path.join(dir, 'artifacts'));
    const removedTempFiles: string[] = [];
    const temp = path.join(dir, compactTempFileName);
    if (fs.existsSync(temp)) {
      fs.rmSync(temp);
      removedTempFiles.push(compactTempFileName);
    }
    const mark = HighWaterMark.open(this.file);
    let missing: StorageLoss | undefined;
    if (!fs.existsSync(this.file)) {
      const committed = Math.max(0, ...(mark.points ?? []).map((p) => p.end));
      if (mark.points !== undefined) {
        missing = { code: 'store.truncated', message: `${this.file} is missing, but ${committed} bytes were committed to it`, committedBytes: committed, intactBytes: 0, droppedBytes: 0 };
        if (!options.acceptLoss) {
          mark.close();
          throw new StoreError('store.truncated', `${missing.message}; refusing to open (accept the loss explicitly to start an empty journal)`);
        }
      }
      createRecordFile(this.file, journalFileKind);
    }
    let opened: ReturnType<typeof openJournal>;
    try {
      opened = openJournal(this.file, missing ? undefined : mark.points, options.acceptLoss);
      mark.set([markPointAt(opened.fd, opened.end)]);
    } catch (error) {
      mark.close();
      throw error;
    }
    this.mark = mark;
    this.fd = opened.fd;
    this.end = opened.end;
    this.version = opened.version;
    this.index = opened.index;
    this.bytesAtLastCompaction = opened.end;
    this.openReport = {
      records: opened.records,
      droppedTailBytes: opened.droppedTailBytes,
      removedTempFiles,
      runs: opened.index.runs.size,
      ...(missing || opened.loss ? { loss: missing ?? opened.loss } : {}),
    };
  }

  /** Opens (creating when needed) the journal of state directory `dir`. */
  static open(dir: string, options: FileJournalOptions = {}): FileJournalStore {
    fs.mkdirSync(dir, { recursive: true });
    // A Node store's directory is refused before a LOCK or an empty journal is written into it.
    assertStateDirOf('router', dir);
    const lock = acquireStateLock(dir);
    try {
      return new FileJournalStore(dir, lock, options);
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  /** Format version of the journal file (older files are rewritten in the current one by `compact`). */
  get formatVersion(): number {
    return this.version;
  }

  /** Current size of the journal file in bytes. */
  get fileBytes(): number {
    return this.end;
  }

  commit(entries: readonly CommitEntry[]): CommitRejection[] {
    if (!this.observeCommit) return this.commitEntries(entries);
    const t0 = performance.now();
    try {
      return this.commitEntries(entries);
    } finally {
      this.observeCommit(performance.now() - t0);
    }
  }

  private commitEntries(entries: readonly CommitEntry[]): CommitRejection[] {
    this.usable();
    if (entries.length > commitEntriesMax) {
      throw new StoreError('store.io', `${entries.length} entries exceed commitEntriesMax (${commitEntriesMax})`);
    }
    const rejections: CommitRejection[] = [];
    const accepted: NormalizedEntry[] = [];
    const staged = new Map<string, number>();
    for (const entry of entries) {
      const normalized = validateEntry(entry, this.version);
      const problem = this.index.checkEntry(entry, staged.get(entry.runId));
      if (problem) {
        rejections.push({ runId: entry.runId, code: 'store.conflict', message: `run ${entry.runId}: ${problem}` });
        continue;
      }
      staged.set(entry.runId, entry.lastSeq);
      accepted.push(normalized);
    }
    if (accepted.length === 0) return rejections;
    const committedAt = this.clock();
    const record = encodeRecord(recordType.commit, encodeCommit(committedAt, accepted));
    const at = this.end;
    try {
      appendDurable(this.fd, at, record);
    } catch (error) {
      if (error instanceof FatalIoError) this.failure = error;
      throw error;
    }
    this.end = at + record.length;
    this.mark.set([{ end: this.end, crc: record.readUInt32LE(record.length - 4) }]);
    this.indexCommittedRecord(at, record);
    // A version-1 file cannot hold projections: they are kept in memory until compaction.
    if (this.version < 2) for (const entry of entries) if (entry.outcome && !rejections.some((r) => r.runId === entry.runId)) this.keepProjection(entry.runId, entry.lastSeq, entry.outcome);
    return rejections;
  }

  load(runId: string): RunTail | undefined {
    this.usable();
    assertPortableId(runId, 'run id');
    const run = this.index.runs.get(runId);
    if (!run) return undefined;
    const parts: Uint8Array[] = [];
    for (let i = firstSegmentAfter(run.segments, run.checkpointSeq); i < run.segments.length; i++) {
      const segment = run.segments[i]!;
      const block = this.read(segment);
      // A packed segment of a terminal run may start before the checkpoint.
      parts.push(segment.firstSeq > run.checkpointSeq ? block : block.subarray(offsetOfSeq(block, segment.firstSeq, run.checkpointSeq + 1)));
    }
    // Lines are joined by `\n` with no final newline, byte for byte what the SQLite host returns.
    const joined = Buffer.concat(parts);
    const events = joined.length > 0 ? joined.subarray(0, joined.length - 1) : joined;
    const tail: RunTail = { plan: this.read(run.plan), events, lastSeq: run.lastSeq };
    if (run.checkpoint) tail.checkpoint = this.read(run.checkpoint);
    return tail;
  }

  readEvents(runId: string, afterSeq: number, limit: number): EventPage {
    this.usable();
    assertPortableId(runId, 'run id');
    const run = this.index.runs.get(runId);
    // An unknown run reads as an empty page, as on the SQLite host.
    if (!run) return { events: [], lastSeq: afterSeq, more: false };
    const max = Math.max(0, Math.min(Math.floor(limit), readEventsLimitMax));
    const from = Math.max(0, Math.floor(afterSeq));
    const events: string[] = [];
    for (let i = firstSegmentAfter(run.segments, from); i < run.segments.length && events.length < max; i++) {
      const segment = run.segments[i]!;
      const start = Math.max(from + 1, segment.firstSeq);
      events.push(...eventStrings(this.read(segment), segment.firstSeq, start, max - events.length));
    }
    const lastSeq = events.length > 0 ? from + events.length : afterSeq;
    return { events, lastSeq, more: from + events.length < run.lastSeq };
  }

  getRun(runId: string): RunRecord | undefined {
    this.usable();
    assertPortableId(runId, 'run id');
    const run = this.index.runs.get(runId);
    return run && toRunRecord(run, (slice) => this.read(slice));
  }

  listRuns(filter: { statuses?: readonly string[]; limit?: number } = {}): RunRecord[] {
    this.usable();
    const statuses = filter.statuses && new Set(filter.statuses);
    const limit = Math.max(0, Math.min(filter.limit ?? listRunsLimitMax, listRunsLimitMax));
    const runs = [...this.index.runs.values()].filter((run) => !statuses || statuses.has(run.status));
    runs.sort((a, b) => b.createdAt - a.createdAt || b.ordinal - a.ordinal);
    return runs.slice(0, limit).map((run) => toRunRecord(run, (slice) => this.read(slice)));
  }

  /** The last committed seq of a run (from the index, no read); `undefined` for an unknown run. */
  lastSeqOf(runId: string): number | undefined {
    this.usable();
    return this.index.runs.get(runId)?.lastSeq;
  }

  /** Every run recorded without a projection (a file written before they existed): the host derives them once. */
  runsWithoutProjection(): RunRecord[] {
    this.usable();
    return [...this.index.runs.values()].filter((run) => run.projection === undefined && run.lastSeq > 0).map((run) => toRunRecord(run, (slice) => this.read(slice)));
  }

  /** Keeps a derived projection in memory until the next compaction writes it to the file. */
  keepProjection(runId: string, lastSeq: number, projection: RunProjection): void {
    this.usable();
    const run = this.index.runs.get(runId);
    if (run && run.lastSeq === lastSeq) run.projection = Buffer.from(JSON.stringify(projection));
  }

  /** True when enough has been appended since the last compaction (see `compactAfterBytes`). */
  compactionDue(): boolean {
    return this.end - this.bytesAtLastCompaction >= compactAfterBytes;
  }

  /**
   * Rewrites the journal as a snapshot: per run its plan, latest checkpoint and every event.
   * The new file is written beside the old one, synced, re-read and checked against the index,
   * then renamed over it; a crash at any point leaves one complete file under `journal.log`.
   */
  compact(): CompactionReport {
    this.usable();
    const temp = path.join(this.dir, compactTempFileName);
    const report = writeCompactedJournal({
      temp,
      kind: journalFileKind,
      runs: [...this.index.runs.values()].sort((a, b) => a.ordinal - b.ordinal),
      isTerminal: (run) => this.terminal.has(run.status),
      read: (slice) => this.read(slice),
      readInto: (slice, into) => this.read(slice, into),
      bytesBefore: this.end,
    });
    let reopened: ReturnType<typeof openJournal>;
    try {
      reopened = openJournal(temp);
      assertSameRuns(this.index, reopened.index);
    } catch (error) {
      fs.rmSync(temp, { force: true });
      throw error;
    }
    try {
      // Until the rename is durable either file may stand under `journal.log`.
      this.mark.set([markPointAt(this.fd, this.end), markPointAt(reopened.fd, reopened.end)], true);
      fs.renameSync(temp, this.file);
      fsyncDir(this.dir);
    } catch (error) {
      fs.closeSync(reopened.fd);
      // The rename may or may not have happened: only a reopen can tell which file stands.
      this.failure = new StoreError('store.io', `compaction could not replace the journal: ${(error as Error).message}`);
      throw this.failure;
    }
    fs.closeSync(this.fd);
    this.fd = reopened.fd;
    this.end = reopened.end;
    this.version = reopened.version;
    this.index = reopened.index;
    this.bytesAtLastCompaction = reopened.end;
    this.mark.set([markPointAt(this.fd, this.end)]);
    return { ...report, bytesAfter: reopened.end };
  }

  putArtifact(bytes: Uint8Array, mediaType: string): ArtifactRef {
    this.usable();
    return this.artifacts.put(bytes, mediaType);
  }

  getArtifact(digest: string): Artifact | undefined {
    this.usable();
    return this.artifacts.get(digest);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      fs.closeSync(this.fd);
      this.mark.close();
    } finally {
      this.lock.release();
    }
  }

  private usable(): void {
    if (this.closed) throw new StoreError('store.io', 'the journal is closed');
    if (this.failure) throw new StoreError('store.io', `the journal failed earlier and must be reopened: ${this.failure.message}`);
  }

  private read(slice: { offset: number; length: number }, into?: Buffer): Buffer {
    const out = into ? into.subarray(0, slice.length) : Buffer.alloc(slice.length);
    if (readFully(this.fd, out, slice.offset) !== slice.length) {
      throw new StoreError('store.io', `short read of ${slice.length} bytes at ${slice.offset}`);
    }
    return out;
  }

  /** Indexes a commit record just made durable, from the bytes that were written. */
  private indexCommittedRecord(at: number, record: Buffer): void {
    const payloadOffset = at + recordHeaderBytes;
    const payload = record.subarray(recordHeaderBytes, record.length - 4);
    this.index.applyRecord({ offset: at, type: recordType.commit, payload, payloadOffset });
  }
}

function openJournal(file: string, mark?: readonly MarkPoint[], acceptLoss?: boolean): ReturnType<typeof openRecordFile> & { index: JournalIndex } {
  const index = new JournalIndex();
  const opened = openRecordFile(file, journalFileKind, (record) => index.applyRecord(record), { mark, acceptLoss });
  try {
    index.finish();
  } catch (error) {
    fs.closeSync(opened.fd);
    throw error;
  }
  return { ...opened, index };
}

/** Checks one entry's shape; returns it with its events `\n`-terminated and its projection as JSON (version 2). */
function validateEntry(entry: CommitEntry, version: number): NormalizedEntry {
  assertPortableId(entry.runId, 'run id');
  if (!Number.isInteger(entry.expectedSeq) || !Number.isInteger(entry.lastSeq) || entry.expectedSeq < 0 || entry.lastSeq < entry.expectedSeq || entry.lastSeq > 0xffffffff) {
    throw new RangeError(`run ${entry.runId}: bad seqs expectedSeq=${entry.expectedSeq} lastSeq=${entry.lastSeq}`);
  }
  if (typeof entry.status !== 'string' || entry.status.length === 0 || Buffer.byteLength(entry.status) > statusBytesMax || /[\x00-\x1f\x7f]/.test(entry.status)) {
    throw new RangeError(`run ${entry.runId}: bad status ${JSON.stringify(entry.status)}`);
  }
  const events = normalizeEvents(entry.events, entry.lastSeq - entry.expectedSeq, entry.runId);
  if ((entry.plan?.length ?? 0) > planBytesMax || (entry.checkpoint?.length ?? 0) > checkpointBytesMax) {
    throw new StoreError('store.io', `run ${entry.runId}: plan or checkpoint exceeds planBytesMax/checkpointBytesMax`);
  }
  const { outcome, ...rest } = entry;
  const projection = outcome && version >= 2 ? Buffer.from(JSON.stringify(outcome)) : undefined;
  if ((projection?.length ?? 0) > checkpointBytesMax) {
    throw new StoreError('store.io', `run ${entry.runId}: projection exceeds checkpointBytesMax`);
  }
  const size = events.length + (entry.plan?.length ?? 0) + (entry.checkpoint?.length ?? 0) + (projection?.length ?? 0);
  if (size > recordBytesMax) {
    throw new StoreError('store.io', `run ${entry.runId}: entry of ${size} bytes exceeds recordBytesMax (${recordBytesMax})`);
  }
  return { ...rest, events, ...(projection ? { projection } : {}) };
}

function assertSameRuns(before: JournalIndex, after: JournalIndex): void {
  if (before.runs.size !== after.runs.size) {
    throw new StoreError('store.corrupt', `compaction wrote ${after.runs.size} runs instead of ${before.runs.size}`);
  }
  for (const run of before.runs.values()) {
    const copy = after.runs.get(run.runId);
    if (!copy || copy.lastSeq !== run.lastSeq || copy.status !== run.status || copy.checkpointSeq !== run.checkpointSeq) {
      throw new StoreError('store.corrupt', `compaction did not reproduce run ${run.runId}`);
    }
  }
}

export type { CompactionReport };

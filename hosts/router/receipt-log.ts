/**
 * The receipt log of local tool attempts: `receipts.log` in the state directory, the same
 * checksummed record framing as the journal (record-file.ts) with a JSON payload per record.
 * Each append is made durable before the call returns.
 *
 * Record types, in the order an attempt writes them:
 *   1 `claimed`   the launcher took the attempt; written before any process exists
 *   2 `started`   the process exists: pid + start ticks + boot id; `startedAt` is this record's time
 *   3 `stopping`  an exact stop was asked for (intent), before the first signal is sent
 *   4 `completed` the process ended: exit code or signal, JSON output, stderr tail
 *
 * A second `claimed` for the same invocation id is refused (`store.conflict`): an attempt is
 * never started twice under one id.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { assertPortableId, StoreError } from '../core/store.js';
import { receiptBytesMax } from './limits.js';
import type { ProcessIdentity } from '../shared/process-identity.js';
import {
  appendDurable,
  createRecordFile,
  encodeFileHeader,
  encodeRecord,
  FatalIoError,
  openRecordFile,
  writeFileDurable,
  type RecordFileKind,
  type StorageLoss,
} from './record-file.js';
import { HighWaterMark, markPointAt } from './high-water-mark.js';

export const receiptFileKind: RecordFileKind = { magic: 'ADWRCPT\n', version: 1 };
export const receiptFileName = 'receipts.log';
const receiptType = { claimed: 1, started: 2, stopping: 3, completed: 4 } as const;

export interface ClaimReceipt {
  invocationId: string;
  tool: string;
  /** Declared by the tool: running it twice has the effect of running it once. */
  idempotent: boolean;
  claimedAt: number;
  /**
   * The run that asked, and its last committed seq when the attempt was claimed (at or after its
   * `capability.requested`): a journal that reopens behind it lost acknowledged records.
   * Absent in receipts written before they were recorded.
   */
  runId?: string;
  journalSeq?: number;
}

/** Where a claim says the journal had got to. */
export interface ClaimOrigin {
  runId: string;
  journalSeq: number;
}

export interface StartReceipt {
  invocationId: string;
  pid: number;
  /** Absent when the identity could not be read (no /proc): recovery then cannot verify it. */
  identity?: ProcessIdentity;
  startedAt: number;
}

export interface StopReceipt {
  invocationId: string;
  intent: string;
  at: number;
}

export interface CompletionReceipt {
  invocationId: string;
  exitCode: number | null;
  signal: string | null;
  /** stdout parsed as JSON, when the tool exited 0 and printed valid JSON. */
  output?: unknown;
  /** Why there is no output. */
  outputError?: string;
  stderrTail: string;
  endedAt: number;
  /** Set when the process ended because of an exact stop or a timeout. */
  stopIntent?: string;
}

export interface AttemptReceipts {
  claim: ClaimReceipt;
  start?: StartReceipt;
  stop?: StopReceipt;
  completion?: CompletionReceipt;
}

export class ReceiptLog {
  private readonly attempts = new Map<string, AttemptReceipts>();
  private fd: number;
  private end: number;
  private failure: StoreError | undefined;
  private readonly mark: HighWaterMark;
  /** Bytes of a torn tail cut off on open. */
  readonly droppedTailBytes: number;
  /** Acknowledged receipts that were lost and accepted as lost (`acceptLoss`). */
  readonly loss: StorageLoss | undefined;

  private constructor(
    private readonly file: string,
    private readonly clock: () => number,
    acceptLoss: boolean,
  ) {
    const mark = HighWaterMark.open(file);
    let missing: StorageLoss | undefined;
    if (!fs.existsSync(file)) {
      if (mark.points !== undefined) {
        // Without its receipts a started tool would look never claimed and run again: fail closed.
        const committed = Math.max(0, ...mark.points.map((p) => p.end));
        missing = { code: 'store.truncated', message: `${file} is missing, but ${committed} bytes of receipts were written to it`, committedBytes: committed, intactBytes: 0, droppedBytes: 0 };
        if (!acceptLoss) {
          mark.close();
          throw new StoreError('store.truncated', `${missing.message}; refusing to open (accept the loss explicitly to start without them)`);
        }
      }
      createRecordFile(file, receiptFileKind);
    }
    try {
      const opened = openRecordFile(
        file,
        receiptFileKind,
        (record) => {
          this.apply(record.type, parse(record.payload, record.offset), record.offset);
        },
        { mark: missing ? undefined : mark.points, acceptLoss },
      );
      this.fd = opened.fd;
      this.end = opened.end;
      this.droppedTailBytes = opened.droppedTailBytes;
      this.loss = missing ?? opened.loss;
      mark.set([markPointAt(this.fd, this.end)]);
    } catch (error) {
      mark.close();
      throw error;
    }
    this.mark = mark;
  }

  /**
   * Opens the receipt log of state directory `dir` (the directory's owner only). A log that lost
   * acknowledged receipts is refused (`store.truncated` / `store.corrupt`) unless `acceptLoss`.
   */
  static open(dir: string, clock: () => number = Date.now, options: { acceptLoss?: boolean } = {}): ReceiptLog {
    fs.mkdirSync(dir, { recursive: true });
    return new ReceiptLog(path.join(dir, receiptFileName), clock, options.acceptLoss ?? false);
  }

  claim(invocationId: string, tool: string, idempotent: boolean, origin?: ClaimOrigin): ClaimReceipt {
    assertPortableId(invocationId, 'invocation id');
    assertPortableId(tool, 'tool name');
    if (this.attempts.has(invocationId)) {
      throw new StoreError('store.conflict', `attempt ${invocationId} was already claimed`);
    }
    const claim: ClaimReceipt = { invocationId, tool, idempotent, claimedAt: this.clock(), ...(origin ? { runId: origin.runId, journalSeq: origin.journalSeq } : {}) };
    this.append(receiptType.claimed, claim);
    return claim;
  }

  started(invocationId: string, pid: number, identity: ProcessIdentity | undefined): StartReceipt {
    const start: StartReceipt = { invocationId, pid, startedAt: this.clock(), ...(identity ? { identity } : {}) };
    this.append(receiptType.started, start);
    return start;
  }

  stopping(invocationId: string, intent: string): StopReceipt {
    const stop: StopReceipt = { invocationId, intent, at: this.clock() };
    this.append(receiptType.stopping, stop);
    return stop;
  }

  completed(receipt: Omit<CompletionReceipt, 'endedAt'>): CompletionReceipt {
    const completion: CompletionReceipt = { ...receipt, endedAt: this.clock() };
    this.append(receiptType.completed, completion);
    return completion;
  }

  get(invocationId: string): AttemptReceipts | undefined {
    return this.attempts.get(invocationId);
  }

  all(): AttemptReceipts[] {
    return [...this.attempts.values()];
  }

  /**
   * Drops the receipts of attempts whose outcome the journal now holds, by rewriting the log
   * (temp + fsync + rename + fsync(dir)). Unsettled attempts are kept whatever `ids` says.
   */
  retire(ids: Iterable<string>): number {
    this.usable();
    let dropped = 0;
    for (const id of ids) {
      const attempt = this.attempts.get(id);
      if (attempt && (attempt.completion || !attempt.start)) {
        this.attempts.delete(id);
        dropped++;
      }
    }
    if (dropped === 0) return 0;
    const parts: Uint8Array[] = [encodeFileHeader(receiptFileKind)];
    for (const a of this.attempts.values()) {
      parts.push(record(receiptType.claimed, a.claim));
      if (a.start) parts.push(record(receiptType.started, a.start));
      if (a.stop) parts.push(record(receiptType.stopping, a.stop));
      if (a.completion) parts.push(record(receiptType.completed, a.completion));
    }
    const bytes = Buffer.concat(parts);
    // Until the rename is durable either file may stand under `receipts.log`.
    this.mark.set([markPointAt(this.fd, this.end), { end: bytes.length, crc: bytes.readUInt32LE(bytes.length - 4) }], true);
    writeFileDurable(this.file, bytes);
    fs.closeSync(this.fd);
    this.fd = fs.openSync(this.file, 'r+');
    this.end = bytes.length;
    this.mark.set([markPointAt(this.fd, this.end)]);
    return dropped;
  }

  close(): void {
    fs.closeSync(this.fd);
    this.mark.close();
  }

  private append(type: number, value: { invocationId: string }): void {
    this.usable();
    const bytes = record(type, value);
    try {
      appendDurable(this.fd, this.end, bytes);
    } catch (error) {
      if (error instanceof FatalIoError) this.failure = error;
      throw error;
    }
    this.end += bytes.length;
    this.mark.set([{ end: this.end, crc: bytes.readUInt32LE(bytes.length - 4) }]);
    this.apply(type, value, this.end - bytes.length);
  }

  private apply(type: number, value: unknown, offset: number): void {
    const v = value as { invocationId?: unknown };
    if (typeof v.invocationId !== 'string') throw corrupt(offset, 'receipt without an invocation id');
    const attempt = this.attempts.get(v.invocationId);
    if (type === receiptType.claimed) {
      if (attempt) throw corrupt(offset, `second claim of ${v.invocationId}`);
      this.attempts.set(v.invocationId, { claim: value as ClaimReceipt });
      return;
    }
    if (!attempt) throw corrupt(offset, `receipt for unclaimed attempt ${v.invocationId}`);
    if (type === receiptType.started && !attempt.start) attempt.start = value as StartReceipt;
    else if (type === receiptType.stopping && !attempt.stop) attempt.stop = value as StopReceipt;
    else if (type === receiptType.completed && !attempt.completion) attempt.completion = value as CompletionReceipt;
    else throw corrupt(offset, `unexpected receipt type ${type} for ${v.invocationId}`);
  }

  private usable(): void {
    if (this.failure) throw new StoreError('store.io', `the receipt log failed earlier: ${this.failure.message}`);
  }
}

function record(type: number, value: unknown): Buffer {
  const payload = Buffer.from(JSON.stringify(value), 'utf8');
  if (payload.length > receiptBytesMax) {
    throw new StoreError('store.io', `receipt of ${payload.length} bytes exceeds receiptBytesMax (${receiptBytesMax})`);
  }
  return encodeRecord(type, payload);
}

function parse(payload: Buffer, offset: number): unknown {
  try {
    return JSON.parse(payload.toString('utf8'));
  } catch {
    throw corrupt(offset, 'receipt is not JSON');
  }
}

function corrupt(offset: number, message: string): StoreError {
  return new StoreError('store.corrupt', `receipt record at offset ${offset}: ${message}`);
}

/**
 * An append-only file of checksummed records, shared by the journal and the receipt log.
 *
 * File  = header (16 bytes) + record*.
 * Header = 8-byte kind magic (ASCII) | u32 LE format version | u32 LE CRC-32C of the first 12 bytes.
 * Record = u16 LE record magic 0xA7FF (bytes FF A7) | u8 type | u8 reserved (0) | u32 LE reserved (0)
 *        | u32 LE payload length | payload | u32 LE CRC-32C of everything before it in the record.
 *
 * The record magic starts with 0xFF, a byte that never occurs in UTF-8, so the JSON text that
 * makes up most payloads cannot be mistaken for the start of a record when the tail is examined.
 *
 * Durability: a record is appended with positioned writes at the known end of the file and made
 * durable with `fdatasync` (which also persists the new file size). A file is created by writing a
 * temporary file, syncing it, renaming it into place and syncing the directory, so a file that
 * exists always has a complete header.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { StoreError } from '../core/store.js';
import { crc32c } from './crc32c.js';
import { recordBytesMax } from './limits.js';
import type { MarkPoint } from './high-water-mark.js';

export const fileHeaderBytes = 16;
export const recordHeaderBytes = 12;
export const recordTrailerBytes = 4;
export const recordOverheadBytes = recordHeaderBytes + recordTrailerBytes;
const recordMagic0 = 0xff;
const recordMagic1 = 0xa7;

/** What kind of record file this is: its 8-character magic and the newest version this code reads. */
export interface RecordFileKind {
  magic: string;
  version: number;
}

export interface ScannedRecord {
  /** File offset of the record's first byte. */
  offset: number;
  type: number;
  /**
   * Valid only during the `onRecord` call that receives it: the scan reads every record into one
   * reused buffer (a 57 MB journal would otherwise leave 57 MB of garbage buffers behind, which
   * V8 collects late). Copy what must outlive the call.
   */
  payload: Buffer;
  /** File offset of the payload's first byte, for slices into it. */
  payloadOffset: number;
}

export interface OpenedRecordFile {
  fd: number;
  /** Offset just past the last complete record: where the next append goes. */
  end: number;
  version: number;
  records: number;
  /** Bytes of a torn or half-written tail that were cut off. */
  droppedTailBytes: number;
  /** Acknowledged data that was missing or damaged and dropped because the caller accepted the loss. */
  loss?: StorageLoss;
}

/** Acknowledged records that are gone: the file ends (or breaks) before its high-water mark. */
export interface StorageLoss {
  code: 'store.truncated' | 'store.corrupt';
  message: string;
  /** Where the file ended after its last acknowledged append (the mark), when known. */
  committedBytes?: number;
  /** Where the intact records end. */
  intactBytes: number;
  /** Bytes cut off the file after the intact records. */
  droppedBytes: number;
}

export interface OpenRecordFileOptions {
  /** Where the file ended after its last acknowledged append; absent when unknown. */
  mark?: readonly MarkPoint[];
  /** Drop damaged or missing acknowledged data instead of refusing (reported in `loss`). */
  acceptLoss?: boolean;
}

export function encodeFileHeader(kind: RecordFileKind): Buffer {
  const header = Buffer.alloc(fileHeaderBytes);
  if (kind.magic.length !== 8) throw new RangeError('record file magic must be 8 ASCII characters');
  header.write(kind.magic, 0, 'latin1');
  header.writeUInt32LE(kind.version, 8);
  header.writeUInt32LE(crc32c(header.subarray(0, 12)), 12);
  return header;
}

/**
 * The header of a record whose payload is `payloadLength` bytes; the record is the header, the
 * payload and the CRC-32C of both (`crc32c(payload, crc32c(header))`), for writers that stream a
 * payload instead of holding it (compaction).
 */
export function encodeRecordHeader(type: number, payloadLength: number): Buffer {
  if (payloadLength > recordBytesMax) {
    throw new StoreError('store.io', `record of ${payloadLength} bytes exceeds recordBytesMax (${recordBytesMax})`);
  }
  const header = Buffer.alloc(recordHeaderBytes);
  header[0] = recordMagic0;
  header[1] = recordMagic1;
  header[2] = type;
  header.writeUInt32LE(payloadLength, 8);
  return header;
}

/** Frames one payload as a record. */
export function encodeRecord(type: number, payload: Uint8Array): Buffer {
  if (payload.length > recordBytesMax) {
    throw new StoreError('store.io', `record of ${payload.length} bytes exceeds recordBytesMax (${recordBytesMax})`);
  }
  const out = Buffer.alloc(recordOverheadBytes + payload.length);
  out[0] = recordMagic0;
  out[1] = recordMagic1;
  out[2] = type;
  out.writeUInt32LE(payload.length, 8);
  out.set(payload, recordHeaderBytes);
  const crcAt = recordHeaderBytes + payload.length;
  out.writeUInt32LE(crc32c(out.subarray(0, crcAt)), crcAt);
  return out;
}

/** Creates a record file holding only its header, atomically. */
export function createRecordFile(file: string, kind: RecordFileKind): void {
  writeFileDurable(file, encodeFileHeader(kind));
}

/**
 * Opens a record file for reading and appending, feeds every complete record to `onRecord` in
 * file order, and cuts off a torn tail.
 *
 * A bad record (short, bad magic, bad length, bad checksum) is a torn tail only when it is the
 * last thing in the file: the region from it to the end of the file is no longer than one record
 * and holds no valid record. Anything else is `store.corrupt`: a record that was acknowledged is
 * never silently skipped. With a high-water mark, the intact records must also reach one of its
 * points (same offset, same last checksum): a file that ends before it is `store.truncated`, one
 * that reaches past it with other bytes there is `store.corrupt`. With `acceptLoss` both are cut
 * back to the intact records and reported in `loss` instead; nothing is cut when the open fails.
 */
export function openRecordFile(
  file: string,
  kind: RecordFileKind,
  onRecord: (record: ScannedRecord) => void,
  options: OpenRecordFileOptions = {},
): OpenedRecordFile {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r+');
  } catch (error) {
    throw ioError(`cannot open ${file}`, error);
  }
  try {
    const size = fs.fstatSync(fd).size;
    const version = readFileHeader(fd, file, size, kind);
    const mark = options.mark;
    const reachesMark = (end: number) => mark?.some((p) => p.end === end && readCrcBefore(fd, end) === p.crc) ?? false;
    let marked = mark === undefined || reachesMark(fileHeaderBytes);
    let pos = fileHeaderBytes;
    let records = 0;
    const header = Buffer.alloc(recordHeaderBytes);
    const body = { buffer: Buffer.alloc(64 * 1024) };
    while (pos < size) {
      const record = readRecordAt(fd, pos, size, header, body);
      if (record === undefined) break;
      onRecord(record);
      records++;
      pos = record.payloadOffset + record.payload.length + recordTrailerBytes;
      if (!marked && mark!.some((p) => p.end === pos)) marked = reachesMark(pos);
    }
    const tail = size - pos;
    let loss: StorageLoss | undefined;
    if (tail > 0) {
      try {
        assertTornTail(fd, file, pos, size);
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        loss = { code: 'store.corrupt', message: `${error.message} (${tail} bytes from there to the end of the ${size}-byte file)`, intactBytes: pos, droppedBytes: tail };
      }
    }
    if (!marked && !loss) {
      const committed = Math.max(...mark!.map((p) => p.end));
      loss = {
        code: pos < committed ? 'store.truncated' : 'store.corrupt',
        message:
          pos < committed
            ? `${file}: intact records end at byte ${pos} of ${size}, but ${committed} bytes were committed: ${committed - pos} bytes of acknowledged records are missing`
            : `${file}: intact records end at byte ${pos} of ${size}, but they do not match the ${committed} bytes that were committed (the file was replaced or rewritten)`,
        committedBytes: committed,
        intactBytes: pos,
        droppedBytes: tail,
      };
    }
    if (loss && !options.acceptLoss) throw new StoreError(loss.code, `${loss.message}; refusing to open (accept the loss explicitly to cut the file back to ${pos} bytes)`);
    if (tail > 0) {
      fs.ftruncateSync(fd, pos);
      fs.fdatasyncSync(fd);
    }
    return { fd, end: pos, version, records, droppedTailBytes: loss ? 0 : tail, ...(loss ? { loss } : {}) };
  } catch (error) {
    fs.closeSync(fd);
    if (error instanceof StoreError) throw error;
    throw ioError(`cannot read ${file}`, error);
  }
}

function readCrcBefore(fd: number, end: number): number | undefined {
  const crc = Buffer.alloc(4);
  return readFully(fd, crc, end - 4) === 4 ? crc.readUInt32LE(0) : undefined;
}

function readFileHeader(fd: number, file: string, size: number, kind: RecordFileKind): number {
  const header = Buffer.alloc(fileHeaderBytes);
  if (size < fileHeaderBytes || readFully(fd, header, 0) < fileHeaderBytes) {
    throw new StoreError('store.corrupt', `${file}: file header is incomplete (${size} bytes)`);
  }
  if (header.toString('latin1', 0, 8) !== kind.magic || header.readUInt32LE(12) !== crc32c(header.subarray(0, 12))) {
    throw new StoreError('store.corrupt', `${file}: not a ${kind.magic.trim()} file (bad header)`);
  }
  const version = header.readUInt32LE(8);
  if (version > kind.version) {
    throw new StoreError('store.schema-too-new', `${file}: format version ${version} is newer than ${kind.version}`);
  }
  return version;
}

/** The record at `pos`, or `undefined` when it is not a complete record with a valid checksum. */
function readRecordAt(fd: number, pos: number, size: number, header: Buffer, reuse?: { buffer: Buffer }): ScannedRecord | undefined {
  if (size - pos < recordOverheadBytes) return undefined;
  if (readFully(fd, header, pos) < recordHeaderBytes) return undefined;
  if (header[0] !== recordMagic0 || header[1] !== recordMagic1 || header[3] !== 0 || header.readUInt32LE(4) !== 0) {
    return undefined;
  }
  const length = header.readUInt32LE(8);
  if (length > recordBytesMax || pos + recordOverheadBytes + length > size) return undefined;
  let body: Buffer;
  if (reuse) {
    if (reuse.buffer.length < length + recordTrailerBytes) reuse.buffer = Buffer.alloc(Math.max(length + recordTrailerBytes, 2 * reuse.buffer.length));
    body = reuse.buffer.subarray(0, length + recordTrailerBytes);
  } else body = Buffer.alloc(length + recordTrailerBytes);
  if (readFully(fd, body, pos + recordHeaderBytes) < body.length) return undefined;
  const crc = crc32c(body.subarray(0, length), crc32c(header));
  if (crc !== body.readUInt32LE(length)) return undefined;
  return { offset: pos, type: header[2]!, payload: body.subarray(0, length), payloadOffset: pos + recordHeaderBytes };
}

/** Throws `store.corrupt` unless the bad region starting at `pos` can only be a torn last write. */
function assertTornTail(fd: number, file: string, pos: number, size: number): void {
  const tail = size - pos;
  if (tail > recordOverheadBytes + recordBytesMax) {
    throw new StoreError('store.corrupt', `${file}: bad record at offset ${pos} with ${tail} bytes after it (more than one write)`);
  }
  const bytes = Buffer.alloc(tail);
  readFully(fd, bytes, pos);
  const header = Buffer.alloc(recordHeaderBytes);
  for (let at = bytes.indexOf(recordMagic0, 1); at !== -1; at = bytes.indexOf(recordMagic0, at + 1)) {
    if (bytes[at + 1] !== recordMagic1) continue;
    if (readRecordAt(fd, pos + at, size, header) !== undefined) {
      throw new StoreError(
        'store.corrupt',
        `${file}: bad record at offset ${pos}, followed by a valid record at offset ${pos + at}`,
      );
    }
  }
}

/** Appends `data` at `position` and makes it durable. On a failed write the file is cut back. */
export function appendDurable(fd: number, position: number, data: Uint8Array): void {
  try {
    let done = 0;
    while (done < data.length) done += fs.writeSync(fd, data, done, data.length - done, position + done);
  } catch (error) {
    try {
      fs.ftruncateSync(fd, position);
    } catch {
      // The caller poisons the file: its tail is unknown until the next open checks it.
      throw ioError('append failed and the file could not be cut back', error, true);
    }
    throw ioError('append failed', error);
  }
  try {
    fs.fdatasyncSync(fd);
  } catch (error) {
    // After a failed fsync the kernel may have dropped the dirty pages: nothing about the tail can
    // be trusted until the file is reopened and checked.
    throw ioError('fdatasync failed', error, true);
  }
}

/** A StoreError `store.io`; `fatal` marks errors after which the open file must not be used. */
export class FatalIoError extends StoreError {}

function ioError(message: string, cause: unknown, fatal = false): StoreError {
  const text = `${message}: ${cause instanceof Error ? cause.message : String(cause)}`;
  return fatal ? new FatalIoError('store.io', text) : new StoreError('store.io', text);
}

export function readFully(fd: number, into: Buffer, position: number): number {
  let done = 0;
  while (done < into.length) {
    const n = fs.readSync(fd, into, done, into.length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

export function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Writes a whole file atomically: temp file, fsync, rename over `file`, fsync of the directory. */
export function writeFileDurable(file: string, data: Uint8Array): void {
  const temp = `${file}.tmp`;
  const fd = fs.openSync(temp, 'w');
  try {
    let done = 0;
    while (done < data.length) done += fs.writeSync(fd, data, done, data.length - done, done);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, file);
  fsyncDir(path.dirname(file));
}

/**
 * The high-water mark of a record file: `<file>.mark`, where the file ended after its latest
 * acknowledged append. It lets `open` tell a torn tail (bytes past the mark, from a write that
 * never returned) from a truncation (the file ends before the mark: acknowledged records lost).
 *
 * File = two slots of `markSlotBytes`, written in turn, so a torn write of the mark damages only
 * the slot being written and the other one still holds the previous mark.
 * Slot = u32 LE counter | u32 LE point count (1 or 2) | per point: f64 LE end offset, u32 LE the
 *        file's last 4 bytes before that offset (the last record's checksum, or the header's)
 *        | zero padding | u32 LE CRC-32C of the slot's first 36 bytes.
 *
 * Two points during a rewrite of the file (compaction, receipt retirement): the old file and the
 * new one are both acceptable until the rename is durable.
 *
 * Durability: the mark is written after the file's own `fdatasync`, so it never names bytes that
 * are not durable; it is not synced itself (a stale mark only weakens the check), except before
 * a rename, when a stale mark would name the replaced file.
 */
import * as fs from 'node:fs';
import { StoreError } from '../core/store.js';
import { crc32c } from './crc32c.js';
import { readFully, writeFileDurable } from './record-file.js';

export const markSuffix = '.mark';
const markSlotBytes = 40;
const markSlotCrcAt = 36;
const markPointsMax = 2;

/** The file is intact up to `end` when its 4 bytes before `end` are `crc` and a record ends there. */
export interface MarkPoint {
  end: number;
  crc: number;
}

export class HighWaterMark {
  private counter: number;

  private constructor(
    private readonly file: string,
    private fd: number | undefined,
    /** What the mark said when it was opened; `undefined` when the directory had no mark yet. */
    readonly points: readonly MarkPoint[] | undefined,
    counter: number,
  ) {
    this.counter = counter;
  }

  /** Reads the mark of record file `file` (absent for a directory written before marks existed). */
  static open(file: string): HighWaterMark {
    const markFile = `${file}${markSuffix}`;
    if (!fs.existsSync(markFile)) return new HighWaterMark(markFile, undefined, undefined, 0);
    const fd = fs.openSync(markFile, 'r+');
    const bytes = Buffer.alloc(markSlotBytes * 2);
    readFully(fd, bytes, 0);
    const slots = [decodeSlot(bytes.subarray(0, markSlotBytes)), decodeSlot(bytes.subarray(markSlotBytes))].filter((s) => s !== undefined);
    if (slots.length === 0) {
      fs.closeSync(fd);
      throw new StoreError('store.corrupt', `${markFile}: both slots of the high-water mark are damaged`);
    }
    const newest = slots.reduce((a, b) => (b.counter > a.counter ? b : a));
    return new HighWaterMark(markFile, fd, newest.points, newest.counter);
  }

  /** Records where the file now ends; `sync` makes the mark durable (before a rename). */
  set(points: readonly MarkPoint[], sync = false): void {
    if (points.length < 1 || points.length > markPointsMax) throw new RangeError(`a mark holds 1..${markPointsMax} points`);
    this.counter = (this.counter + 1) >>> 0;
    const slot = encodeSlot(this.counter, points);
    if (this.fd === undefined) {
      writeFileDurable(this.file, Buffer.concat([slot, slot]));
      this.fd = fs.openSync(this.file, 'r+');
      return;
    }
    fs.writeSync(this.fd, slot, 0, slot.length, (this.counter % 2) * markSlotBytes);
    if (sync) fs.fdatasyncSync(this.fd);
  }

  close(): void {
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }
}

function encodeSlot(counter: number, points: readonly MarkPoint[]): Buffer {
  const slot = Buffer.alloc(markSlotBytes);
  slot.writeUInt32LE(counter, 0);
  slot.writeUInt32LE(points.length, 4);
  points.forEach((p, i) => {
    slot.writeDoubleLE(p.end, 8 + i * 12);
    slot.writeUInt32LE(p.crc >>> 0, 16 + i * 12);
  });
  slot.writeUInt32LE(crc32c(slot.subarray(0, markSlotCrcAt)), markSlotCrcAt);
  return slot;
}

function decodeSlot(slot: Buffer): { counter: number; points: MarkPoint[] } | undefined {
  if (slot.length < markSlotBytes || slot.readUInt32LE(markSlotCrcAt) !== crc32c(slot.subarray(0, markSlotCrcAt))) return undefined;
  const n = slot.readUInt32LE(4);
  if (n < 1 || n > markPointsMax) return undefined;
  const points: MarkPoint[] = [];
  for (let i = 0; i < n; i++) points.push({ end: slot.readDoubleLE(8 + i * 12), crc: slot.readUInt32LE(16 + i * 12) });
  return { counter: slot.readUInt32LE(0), points };
}

/** The 4 bytes before `end` of an open record file: the mark point for a file that ends there. */
export function markPointAt(fd: number, end: number): MarkPoint {
  const crc = Buffer.alloc(4);
  if (readFully(fd, crc, end - 4) < 4) throw new StoreError('store.io', `short read of the checksum before offset ${end}`);
  return { end, crc: crc.readUInt32LE(0) };
}

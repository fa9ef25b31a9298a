/** Little-endian writer and bounds-checked reader for record payloads. */
import { StoreError } from '../core/store.js';

export class BinaryWriter {
  private chunks: Uint8Array[] = [];
  private scratch = Buffer.alloc(8);
  length = 0;

  u8(value: number): this {
    return this.push(Uint8Array.of(value));
  }
  u16(value: number): this {
    this.scratch.writeUInt16LE(value, 0);
    return this.push(Buffer.from(this.scratch.subarray(0, 2)));
  }
  u32(value: number): this {
    this.scratch.writeUInt32LE(value, 0);
    return this.push(Buffer.from(this.scratch.subarray(0, 4)));
  }
  f64(value: number): this {
    this.scratch.writeDoubleLE(value, 0);
    return this.push(Buffer.from(this.scratch.subarray(0, 8)));
  }
  /** A string with a u16 byte length in front. */
  str16(value: string): this {
    const bytes = Buffer.from(value, 'utf8');
    return this.u16(bytes.length).push(bytes);
  }
  /** Bytes with a u32 length in front. */
  bytes32(value: Uint8Array): this {
    return this.u32(value.length).push(value);
  }
  push(bytes: Uint8Array): this {
    this.chunks.push(bytes);
    this.length += bytes.length;
    return this;
  }
  finish(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }
}

/** A slice of a payload: where the bytes start in the payload and how many there are. */
export interface PayloadSlice {
  at: number;
  length: number;
}

export class BinaryReader {
  pos = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly where: string,
  ) {}

  private need(n: number): number {
    if (this.pos + n > this.buf.length) {
      throw new StoreError('store.corrupt', `${this.where}: payload ends early at byte ${this.pos} (needs ${n} more)`);
    }
    const at = this.pos;
    this.pos += n;
    return at;
  }
  u8(): number {
    return this.buf[this.need(1)]!;
  }
  u16(): number {
    return this.buf.readUInt16LE(this.need(2));
  }
  u32(): number {
    return this.buf.readUInt32LE(this.need(4));
  }
  f64(): number {
    return this.buf.readDoubleLE(this.need(8));
  }
  str16(): string {
    const length = this.u16();
    const at = this.need(length);
    return this.buf.toString('utf8', at, at + length);
  }
  slice32(): PayloadSlice {
    const length = this.u32();
    return { at: this.need(length), length };
  }
  done(): boolean {
    return this.pos === this.buf.length;
  }
  expectEnd(): void {
    if (!this.done()) throw new StoreError('store.corrupt', `${this.where}: ${this.buf.length - this.pos} trailing bytes`);
  }
}

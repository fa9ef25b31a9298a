// Checksums of the SQLite store's values (schema v12). SQLite's own checks (`quick_check`,
// `integrity_check`) see a damaged page structure, not a byte changed inside a value; the journal's
// rows, checkpoints and plans carry a CRC-32 of their bytes, checked whenever they are read and by
// `agent-workflow doctor`. A value stored before v12 has none (NULL) and is read unchecked.
import * as zlib from 'node:zlib';
import { StoreError } from '../../../core/store.js';

const crcTable = ((): Uint32Array => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (ISO-HDLC, zlib's), table-driven: the same values as `zlib.crc32`, for Node before 20.15 which has none. */
export function crc32Portable(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = crcTable[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

// zlib's native CRC-32 (~0.2 µs for a 256-byte row, ~0.4 µs for 2 KiB) where Node has it; a named
// import would fail to load on the Node versions (>= 20, < 20.15) that lack it.
const crc32: (bytes: Uint8Array) => number = (zlib as { crc32?: (bytes: Uint8Array) => number }).crc32 ?? crc32Portable;

/** The CRC-32 a value is stored with. */
export function checksum(bytes: Uint8Array): number {
  return crc32(bytes);
}

/** Refuses a value whose bytes no longer match the checksum it was stored with (`store.corrupt`). */
export function verified<T extends Uint8Array | null>(bytes: T, crc: number | null, what: () => string): T {
  if (bytes !== null && crc !== null && crc32(bytes) !== crc) throw new StoreError('store.corrupt', `${what()} does not match the checksum it was stored with: the database file was changed or damaged (run \`agent-workflow doctor\`)`);
  return bytes;
}

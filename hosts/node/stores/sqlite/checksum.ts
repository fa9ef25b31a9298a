// Checksums of the SQLite store's values (schema v12). SQLite's own checks (`quick_check`,
// `integrity_check`) see a damaged page structure, not a byte changed inside a value; the journal's
// rows, checkpoints and plans carry a CRC-32 of their bytes, checked whenever they are read and by
// `agent-workflow doctor`. A value stored before v12 has none (NULL) and is read unchecked.
import { crc32 } from 'node:zlib';
import { StoreError } from '../../../core/store.js';

/** The CRC-32 a value is stored with. */
export function checksum(bytes: Uint8Array): number {
  return crc32(bytes);
}

/** Refuses a value whose bytes no longer match the checksum it was stored with (`store.corrupt`). */
export function verified<T extends Uint8Array | null>(bytes: T, crc: number | null, what: () => string): T {
  if (bytes !== null && crc !== null && crc32(bytes) !== crc) throw new StoreError('store.corrupt', `${what()} does not match the checksum it was stored with: the database file was changed or damaged (run \`agent-workflow doctor\`)`);
  return bytes;
}


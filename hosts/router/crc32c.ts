/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven, one byte per step.
 * Chosen over CRC-32 for its better error detection on storage; check value of "123456789"
 * is 0xE3069283.
 */

const table = buildTable();

function buildTable(): Uint32Array {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
}

/** Continues a CRC over `bytes`; start with `crc = 0`. */
export function crc32c(bytes: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0;
  for (let i = 0; i < bytes.length; i++) c = table[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

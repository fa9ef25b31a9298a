// Random bytes for run ids, drawn from a pool that is refilled from node:crypto in blocks: one
// `randomBytes(16)` per launch went through OpenSSL each time (~1 % of a 2-step run's CPU in a
// profile); a refill per 256 ids costs the same as one call.
import { randomFillSync } from 'node:crypto';

/** Bytes taken from the pool per refill (256 run ids of 16 bytes). */
const poolBytes = 4096;

const pool = Buffer.alloc(poolBytes);
let offset = poolBytes;

/** `n` fresh random bytes (a copy: the pool is never handed out). */
export function pooledRandomBytes(n: number): Uint8Array {
  if (n > poolBytes) return randomFillSync(new Uint8Array(n));
  if (offset + n > poolBytes) {
    randomFillSync(pool);
    offset = 0;
  }
  const out = pool.subarray(offset, offset + n);
  offset += n;
  return new Uint8Array(out);
}

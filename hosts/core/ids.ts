// Run ids made by a host, portable (engine/protocol/ids.ts), in one of two forms:
//
//   drawn    `run-<10 chars of time><16 random chars>`   a launch that names no run (sortable by time)
//   keyed    `<k|i>-<32 hex of SHA-256 of the key>`      a launch that names a key, so that a second
//                                                        launch with the same key finds the first run:
//                                                        `k` an idempotency key, `i` a trigger's dedupe key
const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';

export function newRunId(now: number, random: (bytes: number) => Uint8Array): string {
  let time = '';
  let t = Math.floor(now);
  for (let i = 0; i < 10; i++) {
    time = alphabet[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = random(16);
  let rand = '';
  for (let i = 0; i < 16; i++) rand += alphabet[bytes[i] % 32];
  return `run-${time}${rand}`;
}

/** A keyed run id (see above); the digest is the host's (node:crypto, or a portable one). */
export function keyedRunId(kind: 'k' | 'i', key: string, sha256Hex: (text: string) => string): string {
  return `${kind}-${sha256Hex(key).slice(0, 32)}`;
}

// Run ids made by a host: portable (engine/protocol/ids.ts), sortable by time.
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

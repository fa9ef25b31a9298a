/** Events travel as UTF-8 JSON, one per line. The journal stores each one terminated by `\n`. */
import assert from 'node:assert/strict';

const newline = 0x0a;

/**
 * Checks that `events` holds exactly `count` non-empty lines and returns it with a final `\n`.
 * A mismatch is a programmer error of the caller (the engine), so it asserts.
 */
export function normalizeEvents(events: Uint8Array, count: number, runId: string): Uint8Array {
  if (events.length === 0) {
    assert.equal(count, 0, `run ${runId}: commit announces ${count} events but carries none`);
    return events;
  }
  let lines = 0;
  let start = 0;
  for (let i = 0; i <= events.length; i++) {
    if (i === events.length || events[i] === newline) {
      if (i === events.length && i === start) break; // final newline already present
      assert.ok(i > start, `run ${runId}: empty event line at byte ${i}`);
      lines++;
      start = i + 1;
    }
  }
  assert.equal(lines, count, `run ${runId}: commit announces ${count} events but carries ${lines} lines`);
  if (events[events.length - 1] === newline) return events;
  const out = new Uint8Array(events.length + 1);
  out.set(events);
  out[events.length] = newline;
  return out;
}

/** Byte offset in `block` (events `firstSeq..`, `\n`-terminated) where event `seq` begins. */
export function offsetOfSeq(block: Uint8Array, firstSeq: number, seq: number): number {
  let at = 0;
  for (let s = firstSeq; s < seq; s++) {
    const nl = indexOfNewline(block, at);
    if (nl === -1) return block.length;
    at = nl + 1;
  }
  return at;
}

/** Up to `limit` events of `block` starting at seq `fromSeq`, as strings. */
export function eventStrings(block: Buffer, firstSeq: number, fromSeq: number, limit: number): string[] {
  const out: string[] = [];
  let at = offsetOfSeq(block, firstSeq, fromSeq);
  while (out.length < limit && at < block.length) {
    const nl = indexOfNewline(block, at);
    const end = nl === -1 ? block.length : nl;
    out.push(block.toString('utf8', at, end));
    at = end + 1;
  }
  return out;
}

function indexOfNewline(block: Uint8Array, from: number): number {
  return Buffer.from(block.buffer, block.byteOffset, block.byteLength).indexOf(newline, from);
}

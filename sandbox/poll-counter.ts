/**
 * QuickJS's per-context poll counter. QuickJS decrements it at every poll
 * site (loop back-edges, calls, ...) and calls the interrupt handler when it
 * reaches zero, then resets it to 10 000. The field keeps its value between
 * evaluations, so fuel (handler calls) is only deterministic if every
 * evaluation starts from the reset value.
 */
import type { QuickJSContext } from 'quickjs-emscripten';

/** The value QuickJS resets its poll counter to each time it calls the interrupt handler. */
export const pollCounterInit = 10_000;

export interface PollCounterProbe {
  context: QuickJSContext;
  memory: WebAssembly.Memory;
  /** Brings the counter to pollCounterInit the slow way (a loop until the next handler call). */
  drain(): void;
  /** Runs `fn` with the interrupt handler answering "continue" without counting. */
  unmetered(fn: () => void): void;
}

/** Writes the reset value at a located counter address. */
export function writePollCounter(memory: WebAssembly.Memory, address: number): void {
  new Int32Array(memory.buffer)[address >> 2] = pollCounterInit;
}

/**
 * QuickJS has no call to reset the counter, and resetting it with a loop
 * costs up to 10 000 polls per evaluation. So the field is located once per
 * context, by observation, and written directly: it must read exactly
 * 10 000 right after a handler call, drop by the same amount for the same
 * loop, drop further for a longer loop, be the only such word, and a write to
 * it must be honoured. Returns its byte address, or undefined when any check
 * fails (the caller then keeps using the loop).
 */
export function locatePollCounter(probe: PollCounterProbe): number | undefined {
  const { context, memory } = probe;
  const base = (context as unknown as { ctx?: { value?: unknown } }).ctx?.value;
  if (typeof base !== 'number' || !Number.isInteger(base) || base <= 0 || base % 4 !== 0) return undefined;
  const words = 512;
  if (base + words * 4 > memory.buffer.byteLength) return undefined;
  const loop = context.evalCode('(n) => { for (let i = 0; i < n; i++) {} }', 'probe.js');
  if (loop.error) {
    loop.error.dispose();
    return undefined;
  }
  const read = (): Int32Array => new Int32Array(memory.buffer, base, words).slice();
  const spin = (n: number): void =>
    probe.unmetered(() => {
      const arg = context.newNumber(n);
      const r = context.callFunction(loop.value, context.undefined, arg);
      arg.dispose();
      if (r.error) {
        r.error.dispose();
        throw new Error('probe failed');
      }
      r.value.dispose();
    });
  try {
    probe.drain();
    const a = read();
    spin(50);
    const b = read();
    spin(100);
    const c = read();
    const found: number[] = [];
    for (let i = 0; i < words; i++) {
      const d1 = a[i] - b[i];
      const d2 = b[i] - c[i];
      if (a[i] === pollCounterInit && d1 > 0 && d2 > d1 && c[i] > 0) found.push(i);
    }
    if (found.length !== 1) return undefined;
    const i = found[0];
    const address = base + i * 4;
    writePollCounter(memory, address);
    spin(50);
    if (read()[i] !== pollCounterInit - (a[i] - b[i])) return undefined;
    writePollCounter(memory, address);
    spin(100);
    if (read()[i] !== pollCounterInit - (b[i] - c[i])) return undefined;
    writePollCounter(memory, address);
    return address;
  } catch {
    return undefined;
  } finally {
    loop.value.dispose();
  }
}

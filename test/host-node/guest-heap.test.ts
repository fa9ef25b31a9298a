// The component's memory grows in large steps. V8 starts a full collection of the host's heap at
// every growth of a wasm memory past 64 MiB, and the guest's allocator grows by a few pages at a
// time: a recorded replay of a 32,000-event journal took the engine's memory from 5 to 99 MiB
// and paid dozens of full collections for it. The host now reserves what a replay needs in one growth
// (and a quarter of the memory's size after any call that grew it past 48 MiB). What is counted
// here is V8's full collections during the replay, which do not depend on the machine's speed.
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GuestHeap, growthCheckedFromBytes, reservedUpToBytes } from '../../dist/hosts/core/guest-heap.js';
import { parseExport, replayExport } from '../../dist/hosts/node/sdk/export.js';
// @ts-ignore: a plain ES module shared with the bench
import { largeRunExport } from '../../bench/browser/large-export.mjs';

/** Full (mark-compact) collections of this process while `fn` runs. */
async function fullCollections<T>(fn: () => Promise<T>): Promise<{ result: T; count: number }> {
  let count = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) count++;
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    const result = await fn();
    await new Promise((r) => setTimeout(r, 50)); // entries are delivered asynchronously
    return { result, count };
  } finally {
    observer.disconnect();
  }
}

describe('the component heap grows in large steps', () => {
  it('a recorded replay that takes the engine past 64 MiB costs a few full collections, not one per growth', async () => {
    // A foreach of 8,000 tool calls: 32,000 events, ~19 MB of request text.
    const { file, events } = await largeRunExport(8_000);
    expect(events).toBeGreaterThan(32_000);
    const exported = parseExport(JSON.parse(readFileSync(file, 'utf8')));
    const { result, count } = await fullCollections(() => replayExport(exported, { mode: 'recorded' }));
    expect(result.identical).toBe(true);
    expect(result.eventsReplayed).toBe(events);
    // One growth for the reservation (and a few of V8's own); dozens without it.
    expect(count).toBeLessThanOrEqual(8);
  }, 180_000);

  it('reserves a quarter of the memory after a call that grew it past 48 MiB, and nothing below', () => {
    const memory = new WebAssembly.Memory({ initial: 16 });
    const calls: number[][] = [];
    // The guest's allocator at its simplest: a block past the end, taken by growing the memory.
    const realloc = (oldPtr: number, oldSize: number, align: number, newSize: number) => {
      calls.push([oldPtr, oldSize, align, newSize]);
      if (oldPtr !== 0) return oldPtr;
      const end = memory.buffer.byteLength;
      memory.grow(Math.ceil(newSize / 65536));
      return end;
    };
    const heap = new GuestHeap();
    heap.attach(memory, realloc);
    memory.grow(16); // a call grew it to 2 MiB
    heap.settle();
    expect(calls).toEqual([]);
    memory.grow(growthCheckedFromBytes / 65536); // past 48 MiB
    const size = memory.buffer.byteLength;
    heap.settle();
    expect(heap.reservations).toBe(1);
    expect(calls).toEqual([
      [0, 0, 8, size / 4],
      [size, size / 4, 8, 8],
    ]);
    expect(memory.buffer.byteLength).toBe(size + size / 4);
    heap.settle(); // nothing grew since
    expect(heap.reservations).toBe(1);
    heap.expect(reservedUpToBytes); // never past the cap
    expect(memory.buffer.byteLength).toBe(reservedUpToBytes);
  });
});

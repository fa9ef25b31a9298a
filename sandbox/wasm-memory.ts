/**
 * The linear memory of one QuickJS module, and the per-evaluation bound on it.
 *
 * QuickJS's own heap accounting does not work in this build: under
 * Emscripten its `malloc_usable_size` answers 0, so `JS_SetMemoryLimit`
 * counts 8 bytes per allocation whatever its size (a script limited to 8 MiB
 * held 100-307 MiB). The bound is therefore put where the memory comes from:
 * QuickJS's allocator (dlmalloc) gets memory only by growing the module's
 * `WebAssembly.Memory`, through Emscripten's `emscripten_resize_heap` import,
 * which calls `memory.grow` from JavaScript. `MemoryGuard` gives that one
 * memory object its own `grow` that refuses to pass a ceiling set for each
 * evaluation; the allocation then fails inside QuickJS, which throws its
 * catchable `out of memory` error (or, when it fails again while building
 * that error, a bare `null` — `refused` tells the host which it was).
 *
 * Growth is deterministic: Emscripten asks for the requested size plus
 * 20 %, 10 %, 5 %, 2.5 % (each capped at +96 MiB) and takes the first that
 * succeeds, so a refused step depends only on the sizes involved, never on
 * timing.
 */
import * as L from './limits.js';

export class MemoryGuard {
  /** Growth past this many bytes is refused (the wasm maximum still applies). */
  ceilingBytes = Number.POSITIVE_INFINITY;
  /** Set when a growth was refused since the last `arm`. */
  refused = false;

  constructor(readonly memory: WebAssembly.Memory) {
    const nativeGrow = memory.grow;
    Object.defineProperty(memory, 'grow', {
      value: (deltaPages: number): number => {
        if (memory.buffer.byteLength + deltaPages * L.wasmPageBytes > this.ceilingBytes) {
          this.refused = true;
          throw new RangeError('linear memory ceiling of this evaluation reached');
        }
        try {
          return nativeGrow.call(memory, deltaPages);
        } catch (e) {
          this.refused = true;
          throw e;
        }
      },
      writable: false,
      configurable: false,
    });
  }

  /** Current size of the linear memory. */
  get bytes(): number {
    return this.memory.buffer.byteLength;
  }

  /** Bounds growth for one evaluation; never below the current size (memory cannot shrink). */
  arm(ceilingBytes: number): void {
    this.ceilingBytes = Math.max(ceilingBytes, this.bytes);
    this.refused = false;
  }

  /** Lifts the per-evaluation bound (setting up runtimes, the prelude). */
  disarm(): void {
    this.ceilingBytes = Number.POSITIVE_INFINITY;
  }
}

/**
 * Linear memory one evaluation may grow its module to: the module's initial
 * memory (static data, stack and a fresh runtime, the same in every module)
 * plus `memoryBytes` rounded up to whole pages.
 */
export function evaluationCeilingBytes(memoryBytes: number): number {
  return L.wasmMemoryBytesInitial + Math.ceil(memoryBytes / L.wasmPageBytes) * L.wasmPageBytes;
}

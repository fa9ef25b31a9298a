/**
 * Collects garbage when the memory V8 keeps outside its heap has grown by a profile's step.
 *
 * Every commit allocates its records as buffers (events encoded, framed, joined), and they live
 * until the write and its `fdatasync` return: long enough for V8's small young generation
 * (`--max-semi-space-size=2`) to promote them, after which only a full collection frees them. V8
 * starts one for external memory only after it grew by 64 MB since the last, half the router's
 * budget: measured on a 5,000-item foreach (docs/router.md), 23 MiB of such dead buffers were
 * held at the end of the run. The router asks for a full collection itself (`--expose-gc`, one
 * of its memory flags) whenever external memory (buffers and wasm memories, from
 * `v8.getHeapStatistics()`, ~2 µs) is `collectAfterBytes` above what it was after the last one.
 * A wasm memory that grew (it never shrinks) moves the base up at the next collection, so it
 * costs one collection, not one per cycle.
 */
import { getHeapStatistics } from 'node:v8';

export interface ExternalMemoryStats {
  /** Collections this collector asked for. */
  collections: number;
  /** External bytes right after the last one (or at start). */
  baseBytes: number;
}

export class ExternalMemoryCollector {
  private base: number;
  private collections = 0;

  /** `gc` is `globalThis.gc` of a process started with `--expose-gc`; without it the collector does nothing. */
  constructor(
    private readonly collectAfterBytes: number,
    private readonly gc: (() => void) | undefined = (globalThis as { gc?: () => void }).gc,
    private readonly externalBytes: () => number = () => getHeapStatistics().external_memory,
  ) {
    this.base = this.externalBytes();
  }

  get enabled(): boolean {
    return this.gc !== undefined && this.collectAfterBytes > 0;
  }

  /** Collects when external memory is `collectAfterBytes` above the base; says whether it did. */
  check(): boolean {
    if (!this.enabled) return false;
    const now = this.externalBytes();
    if (now < this.base) this.base = now; // V8 collected by itself meanwhile
    if (now - this.base < this.collectAfterBytes) return false;
    this.gc!();
    this.collections++;
    this.base = this.externalBytes();
    return true;
  }

  stats(): ExternalMemoryStats {
    return { collections: this.collections, baseBytes: this.base };
  }
}

/**
 * Grows the component's heap in large steps.
 *
 * V8 (Node 20) registers the whole buffer of a wasm memory as external memory each time the
 * memory grows, and starts a full collection of the host's heap when external memory is more
 * than 64 MiB above what it was after the last one: once the component's memory is past 64 MiB,
 * every growth costs a full collection. The guest's allocator grows its heap by the few 64 KiB
 * pages each allocation lacks, so a recorded replay that took the memory from 64 to 80 MiB paid
 * about 60 full collections, each as long as the host's heap was large (a replay of 16,000 events
 * 1.2 s → 5 s, of 100,000 events 7 s → 50–70 s; docs/engine.md, "Memory of the component").
 *
 * The host grows it in large steps instead: it has the guest's allocator take a block through
 * the component's `cabi_realloc` and shrink it to 8 bytes, which leaves the rest of the block free
 * at the top of the guest's heap for the allocations that follow. Pages of the block that nothing
 * writes are never resident (the memory is reserved, not used).
 */

export type Realloc = (oldPtr: number, oldSize: number, align: number, newSize: number) => number;

const mib = 1024 * 1024;
/** Below this the memory's growth costs V8 nothing (its external-memory limit is 64 MiB). */
export const growthCheckedFromBytes = 48 * mib;
/** A block reserved after a call that grew the memory: this share of its size. */
export const headroomShare = 0.25;
/** The memory a reservation never takes the component past (wasm32 allows 4 GiB). */
export const reservedUpToBytes = 2048 * mib;
/** A reservation smaller than this is not worth a growth. */
const reservationMinBytes = mib;

export class GuestHeap {
  private memory: WebAssembly.Memory | undefined;
  private realloc: Realloc | undefined;
  /** The memory's size when it was last looked at. */
  private seenBytes = 0;
  /** Blocks reserved so far (for tests and stats). */
  reservations = 0;

  /** The memory and allocator of a new component instance. */
  attach(memory: WebAssembly.Memory, realloc: Realloc): void {
    this.memory = memory;
    this.realloc = realloc;
    this.seenBytes = memory.buffer.byteLength;
  }

  get bytes(): number {
    return this.memory?.buffer.byteLength ?? 0;
  }

  /**
   * Before a call expected to allocate about `bytes` in the guest: reserves them in one growth
   * when they would take the memory past the size where growth starts to cost collections.
   */
  expect(bytes: number): void {
    if (!this.memory || this.bytes + bytes < growthCheckedFromBytes) return;
    this.reserve(bytes);
  }

  /**
   * After a call: when it grew the memory past the checked size, reserves a quarter of the
   * memory's size again, so growth stays in steps of that size.
   */
  settle(): void {
    if (!this.memory) return;
    const size = this.memory.buffer.byteLength;
    if (size <= this.seenBytes) return;
    this.seenBytes = size;
    if (size >= growthCheckedFromBytes) this.reserve(size * headroomShare);
  }

  private reserve(bytes: number): void {
    const size = Math.min(Math.ceil(bytes), reservedUpToBytes - this.bytes);
    if (size < reservationMinBytes) return;
    const ptr = this.realloc!(0, 0, 8, size);
    if (ptr !== 0) this.realloc!(ptr, size, 8, 8);
    this.reservations++;
    this.seenBytes = this.bytes;
  }
}

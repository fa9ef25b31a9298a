/**
 * Worker-side bound on WebAssembly linear memory.
 *
 * The evaluator creates one bounded `WebAssembly.Memory` per QuickJS module
 * (maximum `wasmMemoryBytesMax`). Inside a service worker thread the budget
 * derived from the service's RSS cap may be lower; `installWasmMemoryCap`
 * replaces the thread's `WebAssembly.Memory` constructor with a subclass that
 * lowers every maximum to the cap and remembers each memory (weakly), so the
 * worker can report how much linear memory it still holds — including modules
 * the evaluator has dropped but V8 has not collected yet.
 *
 * Only ever called in a service worker thread (each thread has its own
 * globals); the main thread and the in-process evaluator are untouched.
 */

const pageBytes = 65_536;
const memories: WeakRef<WebAssembly.Memory>[] = [];

/** Lowers the maximum of every `WebAssembly.Memory` created from now on in this thread to `maxBytes`. */
export function installWasmMemoryCap(maxBytes: number): void {
  const capPages = Math.floor(maxBytes / pageBytes);
  if (!(capPages >= 1)) throw new RangeError('the wasm memory cap must be at least one page');
  const Native = WebAssembly.Memory;
  class CappedMemory extends Native {
    constructor(descriptor: WebAssembly.MemoryDescriptor) {
      const maximum = Math.min(descriptor.maximum ?? capPages, capPages);
      if (descriptor.initial > maximum) throw new RangeError(`initial wasm memory is above this worker's cap of ${capPages * pageBytes} bytes`);
      super({ ...descriptor, maximum });
      memories.push(new WeakRef(this));
    }
  }
  Object.defineProperty(WebAssembly, 'Memory', { value: CappedMemory, writable: true, configurable: true, enumerable: false });
}

/** Bytes of linear memory of every tracked memory not yet collected (an upper bound of what it keeps resident). */
export function wasmBytesHeld(): number {
  let total = 0;
  for (let i = memories.length - 1; i >= 0; i--) {
    const memory = memories[i].deref();
    if (memory) total += memory.buffer.byteLength;
    else memories.splice(i, 1);
  }
  return total;
}

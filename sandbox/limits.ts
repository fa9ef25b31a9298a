/**
 * Every bound of the script sandbox, with its unit last.
 *
 * Fuel is counted in interrupt-handler calls: QuickJS calls the handler once
 * every 10 000 "polls" (loop back-edges, function entries, regex steps), so one
 * unit of fuel is roughly 10 000 interpreter steps. It is deterministic: the
 * same script and input always use the same fuel.
 */

/** Interrupt-handler calls allowed per evaluation unless the caller asks otherwise. */
export const fuelDefault = 1_000;
/** Fuel for checkSyntax, which runs code only when a source closes its wrapper. */
export const syntaxCheckFuel = 2;
/** Hard ceiling on the fuel one evaluation may ask for. */
export const fuelMax = 100_000;

/**
 * Work inside C built-ins (see builtin-bounds.ts), in units of one character
 * compared or produced or one array element visited. Measured on this
 * machine (Node 20, quickjs-emscripten 0.32.0): one fuel (10 000 polls of
 * an empty loop) took ~131 µs, String.prototype.indexOf ~2.7 ns per
 * character compared, so one fuel is ~48 000 units; 32 768 charges built-ins
 * somewhat more than interpreted code for the same time.
 */
export const builtinUnitsPerFuel = 32_768;
/** A built-in call whose worst case reaches this many units is charged before it runs (~3 ms of work at most runs unpaid). */
export const builtinUnitsPrecheck = 1 << 20;
/** Smaller calls are summed in the guest and passed to the host in steps of this many units. */
export const builtinUnitsFlush = 32_768;

/**
 * Wall-clock failsafe of one evaluation: wallTimeMsBase + fuel * wallTimeMsPerFuel.
 * Fuel is the bound; this only ends an evaluation that fuel failed to stop
 * (script.wall-time, not deterministic). One fuel took ~0.13 ms idle and
 * ~0.7 ms at load average 10 on 2 cores, so 2 ms per fuel leaves a margin of
 * about three under load before a correct evaluation could be cut short.
 */
export const wallTimeMsBase = 1_000;
export const wallTimeMsPerFuel = 2;

/**
 * Linear memory an evaluation may grow its module by, beyond the module's
 * initial wasmMemoryBytesInitial (wasm-memory.ts): QuickJS's own accounting
 * counts 8 bytes per allocation under Emscripten and bounds nothing.
 */
export const memoryBytesDefault = 32 * 1024 * 1024;
export const memoryBytesMin = 1 * 1024 * 1024;
export const memoryBytesMax = 256 * 1024 * 1024;

/**
 * Maximum linear memory of one QuickJS module instance. It sits above the
 * largest per-evaluation ceiling (wasmMemoryBytesInitial + memoryBytesMax), so
 * the evaluation's ceiling always fails first; this is the backstop.
 */
export const wasmMemoryBytesMax = memoryBytesMax + 64 * 1024 * 1024;
/** A module whose linear memory grew past this is replaced after a heap failure (memory never shrinks). */
export const wasmMemoryBytesRetainMax = 32 * 1024 * 1024;
/** Initial linear memory of a module instance. */
export const wasmMemoryBytesInitial = 16 * 1024 * 1024;
/** WebAssembly page size (fixed by the spec). */
export const wasmPageBytes = 65_536;

/**
 * QuickJS C stack. Recursive built-ins (JSON.stringify, Array.prototype.join,
 * proxy chains) use about 8 bytes of host (V8 native) stack per byte of this
 * budget; at 128 KiB a deep JSON.stringify overflowed Node's default 984 KiB
 * main-thread stack before QuickJS noticed, at 64 KiB QuickJS always stopped
 * first (measured with quickjs-emscripten 0.32.0, Node 20; see docs/sandbox.md).
 */
export const stackBytesDefault = 64 * 1024;
export const stackBytesMin = 16 * 1024;
export const stackBytesMax = 64 * 1024;

/** UTF-8 bytes of the output JSON text. */
export const outputBytesDefault = 1024 * 1024;
export const outputBytesMax = 16 * 1024 * 1024;
/** Nesting depth of arrays/objects in the output. */
export const outputDepthMax = 64;

/** UTF-8 bytes of the input JSON text. */
export const inputBytesMax = 16 * 1024 * 1024;
/** Nesting depth of arrays/objects in the input. */
export const inputDepthMax = 64;

/** UTF-16 code units of a script's source text. */
export const sourceCharsMax = 256 * 1024;
/**
 * Bracket nesting depth of a script's source (`( [ { ${`, counted before
 * parsing; see source-depth.ts). QuickJS's parser overflowed the host's native
 * stack at ~1 000 levels on Node's main thread and at ~320 levels called from
 * inside the engine's WebAssembly import; 100 leaves a margin of three and is
 * far beyond what scripts nest (output is limited to 64 levels anyway).
 */
export const sourceDepthMax = 100;

/** Characters kept of a script's error message. */
export const errorMessageCharsMax = 1_024;

/** Evaluations on one context before it is rebuilt, to drop accumulated atoms and shapes. */
export const evaluationsPerContextMax = 10_000;

// ---- evaluation service -------------------------------------------------

/** Request body bytes accepted by POST /v1/evaluate. */
export const requestBodyBytesMax = 2 * 1024 * 1024;
/**
 * Copies of a request body the main thread may hold at once while a request
 * is admitted: the received chunks, the joined buffer, the decoded string, the
 * parsed request (and the re-serialised input). Bodies are accounted at this
 * multiple against the main thread's margin (serviceMainRssMarginBytes).
 */
export const requestBodyCopies = 4;
/** Body bytes (times requestBodyCopies) held by admitted requests at once, without an RSS cap. */
export const requestBodyBytesHeldMaxDefault = 128 * 1024 * 1024;
/** After refusing a request without reading its body, the socket is closed at once and destroyed after this long. */
export const refusedSocketLingerMs = 1_000;
/** Worker threads in the service pool. */
export const serviceWorkersDefault = 2;
export const serviceWorkersMax = 64;
/** Requests waiting for a worker before the service answers 429. */
export const serviceQueueLengthDefault = 64;
export const serviceQueueLengthMax = 10_000;
/**
 * Wall-clock backstop for one evaluation in a worker. Fuel is the real bound;
 * this only catches a stuck worker (a bug), which is then replaced.
 */
export const workerEvaluationMsMax = 30_000;
/** Time graceful shutdown waits for in-flight requests before terminating workers. */
export const shutdownGraceMsMax = 10_000;
/** Heap ceiling of one service worker thread (V8 old generation), in MiB. */
export const workerHeapMbMax = 128;
/** Young-generation ceiling of one service worker thread, in MiB. */
export const workerYoungGenerationMbMax = 16;
/**
 * A service worker that still holds more linear memory than this after a job
 * (one module grown to wasmMemoryBytesRetainMax plus a fresh spare) is
 * terminated and replaced, instead of waiting for V8 to collect dropped modules.
 */
export const wasmBytesHeldRetainMax = wasmMemoryBytesRetainMax + wasmMemoryBytesInitial;

// RSS budget of the service (--rss-max-mb). The cap is split as
//   cap = main-process RSS at start + serviceMainRssMarginBytes
//       + workers * (serviceWorkerFixedBytes + V8 heap bounds + wasmMemoryBytesInitial
//                    + per-module wasm maximum)
// where the last term is what is left; see docs/sandbox.md.

/** Growth allowed to the main thread after start (HTTP buffers, queued request bodies). */
export const serviceMainRssMarginBytes = 32 * 1024 * 1024;
/**
 * One worker thread at rest: isolate, Node bootstrap, compiled QuickJS code,
 * its module and spare at their initial size (measured 10-24 MiB, Node 20).
 */
export const serviceWorkerFixedBytes = 24 * 1024 * 1024;
/** V8 heap bounds of a worker in a service with an RSS cap, in MiB. */
export const serviceWorkerOldGenerationMb = 24;
export const serviceWorkerYoungGenerationMb = 8;
/** A module's linear memory above the QuickJS heap a script may ask for (static data, stack, allocator slack). */
export const serviceWasmHeadroomBytes = 24 * 1024 * 1024;
/** Least per-module linear memory an RSS cap must leave; below it the service refuses to start. */
export const serviceWasmMemoryBytesMin = wasmMemoryBytesRetainMax;
/** How often the service compares its RSS with its cap. */
export const rssCheckMs = 250;
/** Least time between two worker recycles for memory. */
export const rssRecycleMsMin = 5_000;
/** Bytes of the bearer token file read at start-up. */
export const tokenFileBytesMax = 4_096;

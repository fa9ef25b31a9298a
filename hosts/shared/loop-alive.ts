// Holding a Node process's event loop while WebAssembly compiles and instantiates.
//
// `WebAssembly.compile` and `instantiate` settle through V8's own task queue, not through a libuv
// handle. In a process with nothing else on its event loop (a script that opens a runtime and
// launches a run, the bench's cold start), libuv finds the loop empty and Node waits in its
// platform's task drain, which returns only once every background task of V8 is done; the code
// that follows the instantiation (the first compile, the first launch) then runs inside that
// drain, and each of its turns waits again, above all for V8's optimizing compilation of the
// engine's hot functions: the first `setImmediate` after the first compile took 250–450 ms on 2
// cores (bench/cold/README.md). A referenced timer keeps libuv polling instead: the promises
// settle from the loop, and the background compilation runs beside the work instead of before it.

/** The period of the timer that holds the loop; it never needs to fire. */
const holdIntervalMs = 60_000;

/** Runs `work` with the event loop held alive until it settles. */
export async function withLoopAlive<T>(work: () => Promise<T>): Promise<T> {
  const hold = setInterval(() => undefined, holdIntervalMs);
  try {
    return await work();
  } finally {
    clearInterval(hold);
  }
}

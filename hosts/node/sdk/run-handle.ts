// The handle `launch`, `resume` and `follow` answer: the run's result, its next stop, its cancel
// and its live stream, over what the runtime lends it.
import type { RunOutcome } from '../../core/kernel.js';
import type { LiveItem, LiveOptions } from '../observe/live.js';
import type { WorkflowRunHandle } from './runtime-types.js';

/** What a handle calls: the kernel's wait, the runtime's cancel and live stream. */
export interface RunHandleHost {
  waitFor(runId: string, orPaused: boolean): Promise<RunOutcome>;
  cancel(runId: string, reason?: string): Promise<RunOutcome>;
  live(runId: string, options?: LiveOptions): AsyncGenerator<LiveItem, void, undefined>;
}

/**
 * A handle on a run. `carriedOutHere`: this process is carrying the run out, so its `result`
 * waits from now on (a commit of it that this process loses fails the wait). Otherwise `result`
 * waits only once asked for: the wait follows the run through the store, one read per poll
 * interval, and a process that queues thousands of runs for workers must not poll for each.
 * `ended`: the outcome of a run that this process saw end (its terminal commit landed here).
 */
export function runHandle(runId: string, carriedOutHere: boolean, host: RunHandleHost, ended?: RunOutcome): WorkflowRunHandle {
  // A run that ended with the commit that started it (its calls answered at once): its outcome is known.
  if (ended) {
    const outcome = Promise.resolve(ended);
    return { runId, result: outcome, settled: () => outcome, cancel: (reason?: string) => host.cancel(runId, reason), live: (options?: LiveOptions) => host.live(runId, options) };
  }
  let result: Promise<RunOutcome> | undefined;
  const wait = () => {
    if (!result) {
      result = host.waitFor(runId, false);
      // A caller that only awaits `settled()` must not see `result`'s failure as unhandled.
      result.catch(() => undefined);
    }
    return result;
  };
  if (carriedOutHere) wait();
  return {
    runId,
    get result() {
      return wait();
    },
    settled: () => host.waitFor(runId, true),
    cancel: (reason?: string) => host.cancel(runId, reason),
    live: (options?: LiveOptions) => host.live(runId, options),
  };
}

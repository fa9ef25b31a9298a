// A queued run (`run --no-wait`, or `resume` of a run that has not started): say whether any
// worker will take it. `run --no-wait` exits 0 (it did what was asked); `resume` exits 12.
import type { WorkflowRuntime } from '../runtime.js';

export async function printQueued(rt: WorkflowRuntime, runId: string, exitCode = 0): Promise<number> {
  const workers = await rt.liveWorkers();
  process.stdout.write(`${JSON.stringify({ apiVersion: 'agent-workflow.cli/v1', kind: 'RunQueued', runId, status: 'queued', workers: workers.length })}\n`);
  if (workers.length === 0) process.stderr.write(`run ${runId} is queued, but no worker is running on this store: start one with \`agent-workflow serve\` (same --dir/--store) to run it\n`);
  else process.stderr.write(`run ${runId} is queued; ${workers.length} worker(s) on this store will run it\n`);
  return exitCode;
}

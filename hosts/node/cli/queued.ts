// `run --no-wait`: the run is committed to the queue; say whether any worker will take it.
import type { WorkflowRuntime } from '../runtime.js';

export async function printQueued(rt: WorkflowRuntime, runId: string): Promise<number> {
  const workers = await rt.liveWorkers();
  process.stdout.write(`${JSON.stringify({ apiVersion: 'agent-workflow.cli/v1', kind: 'RunQueued', runId, status: 'queued', workers: workers.length })}\n`);
  if (workers.length === 0) process.stderr.write(`run ${runId} is queued, but no worker is running on this store: start one with \`agent-workflow serve\` (same --dir/--store) to run it\n`);
  else process.stderr.write(`run ${runId} is queued; ${workers.length} worker(s) on this store will run it\n`);
  return 0;
}

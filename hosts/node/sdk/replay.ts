// Replays of a stored run: `inspect` folds its journal, `recorded` runs it again with no gateway,
// `live` launches a new run of the same pinned plan and input and compares every node's output.
import { replayRequestOf, replaySourceFromStore, type ReplaySource } from '../../core/host-runtime.js';
import type { EngineInstance } from '../../core/engine-instance.js';
import type { RunExport } from '../../core/export-format.js';
import type { JournalStore } from '../../core/store.js';
import type { ExecutionPlan } from '../../core/types.js';
import { sha256Digest } from '../../shared/digest.js';
import { asError, WorkflowError } from './errors.js';
import type { LaunchOptions, WorkflowRunHandle } from './runtime-types.js';

/** What a replay reads and calls. */
export interface ReplayHost {
  readonly store: JournalStore;
  readonly engine: EngineInstance;
  editedPlan(plan: ExecutionPlan, editedTemplate: unknown): Promise<ExecutionPlan>;
  exportRun(runId: string): Promise<RunExport>;
  launch(target: { type: 'plan'; plan: ExecutionPlan; templateKey: string }, options: LaunchOptions): Promise<WorkflowRunHandle>;
}

/** `sha256:` of the JSON text of a node output, to compare two runs' outputs. */
function outputDigest(value: unknown): string {
  return sha256Digest(JSON.stringify(value ?? null));
}

/** Replays a stored run: `inspect` folds the journal; `recorded` re-runs it with no gateway. */
export async function replayStored(host: ReplayHost, runId: string, options: { mode: 'inspect' | 'recorded'; editedTemplate?: unknown } = { mode: 'inspect' }): Promise<Record<string, unknown>> {
  let source: ReplaySource;
  try {
    source = await replaySourceFromStore(host.store, runId);
  } catch (err) {
    throw asError(err);
  }
  const editedPlan = options.editedTemplate !== undefined ? await host.editedPlan(source.plan, options.editedTemplate) : undefined;
  try {
    return await host.engine.withScripts(() => host.engine.replay(replayRequestOf(source, options.mode, editedPlan)));
  } catch (err) {
    throw asError(err);
  }
}

/**
 * `live` replay: a new run of the same pinned plan and input that calls the gateways again,
 * linked to the source run, and a comparison of every node's output by digest.
 */
export async function replayLive(host: ReplayHost, sourceRunId: string, options: { by?: string } = {}): Promise<Record<string, unknown>> {
  const source = await host.exportRun(sourceRunId);
  const accepted = source.events[0];
  if (accepted.payload.capture === 'metadata') throw new WorkflowError('replay.payloads-not-kept', `run ${sourceRunId} was recorded with capture mode metadata: its journal has no input to run again`, { runId: sourceRunId });
  const templateKey = accepted.payload.templateKey as string;
  const handle = await host.launch({ type: 'plan', plan: source.plan, templateKey }, { input: accepted.payload.input, actor: 'operator', correlation: { liveReplayOf: sourceRunId, by: options.by ?? 'sdk' } });
  const outcome = await handle.settled();
  const outputs = (events: any[]) => {
    const out = new Map<string, string>();
    for (const e of events) if (e.type === 'node.output-committed') out.set(e.node.id, outputDigest(e.payload.output));
    return out;
  };
  const recorded = outputs(source.events);
  const live = outputs((await host.exportRun(handle.runId)).events);
  const differences = [...new Set([...recorded.keys(), ...live.keys()])]
    .filter((id) => recorded.get(id) !== live.get(id))
    .map((nodeId) => ({ nodeId, recordedDigest: recorded.get(nodeId) ?? null, liveDigest: live.get(nodeId) ?? null }));
  return {
    mode: 'live',
    sourceRunId,
    runId: handle.runId,
    identical: differences.length === 0 && outcome.status === source.run.status,
    recordedOutcome: { status: source.run.status },
    liveOutcome: outcome,
    differences,
  };
}


// The engine core: holds hot runs, rebuilds cold ones from their latest checkpoint plus the
// events after it, and turns one activation into one commit plus staged gateway work.
import { buildGraph, type Graph } from './compiler/graph.js';
import { EngineError } from './errors.js';
import { limits } from './limits.js';
import { Activation, type ActivationRequest, type GatewayRequest, type ScriptHost } from './runtime/activation.js';
import { applyFacts, failWithoutPayloads } from './runtime/facts.js';
import { nodeSettlement } from './runtime/advance.js';
import { projectRun } from './runtime/projection.js';
import { ensureIndexes, reduce } from './state/reduce.js';
import type { EventEnvelope } from './protocol/events.js';
import type { ExecutionPlan } from './protocol/plan.js';
import { isTerminalStatus, type RunStatus } from './protocol/statuses.js';
import type { ActivationSummary } from './protocol/summary.js';
import type { RunState } from './state/types.js';
import { checkpointSchemaVersion, supportedFlags } from './version.js';

export interface LoadedPlan {
  plan: ExecutionPlan;
  graphs: Map<string, Graph>;
}

export interface RunTailData {
  plan: string;
  checkpoint?: string;
  events: string[];
  lastSeq: number;
}

export interface CommitData {
  runId: string;
  expectedSeq: number;
  lastSeq: number;
  events: string[];
  checkpoint?: string;
  status: RunStatus;
}

/** What the core needs from the host (the WIT imports, in plain types). */
export interface CoreHost extends ScriptHost {
  load(runId: string): RunTailData | undefined;
  commit(commit: CommitData): void;
  request(request: GatewayRequest): void;
  cancel(invocationId: string, reason: string): void;
}

export type { ActivationSummary };

interface HotRun {
  state: RunState;
  loaded: LoadedPlan;
  templateKey: string;
}

const planCache = new Map<string, LoadedPlan>();
const planCacheMax = 64;

export function loadPlan(plan: string | ExecutionPlan): LoadedPlan {
  const parsed = typeof plan === 'string' ? (JSON.parse(plan) as ExecutionPlan) : plan;
  const cached = planCache.get(parsed.planHash);
  if (cached) return cached;
  const unsupported = (parsed.flags ?? []).filter((f) => !(supportedFlags as readonly string[]).includes(f));
  if (parsed.planVersion !== 1 || unsupported.length > 0) {
    throw new EngineError('engine.plan-unsupported', `this engine cannot run plan version ${parsed.planVersion} with flags ${unsupported.join(', ') || '(none)'}`);
  }
  const graphs = new Map<string, Graph>();
  for (const [key, t] of Object.entries(parsed.templates)) graphs.set(key, buildGraph(t.template));
  const loaded = { plan: parsed, graphs };
  if (planCache.size >= planCacheMax) planCache.delete(planCache.keys().next().value as string);
  planCache.set(parsed.planHash, loaded);
  return loaded;
}

/** A plan this instance loaded before; the host sends the hash instead of the plan again. */
export function cachedPlan(planHash: string): LoadedPlan {
  const loaded = planCache.get(planHash);
  if (!loaded) throw new EngineError('engine.plan-unknown', `this engine instance has no plan ${planHash}; send the plan itself`);
  return loaded;
}

export class EngineCore {
  private readonly hot = new Map<string, HotRun>();
  /**
   * The state of the run of the latest activation, after it; `undefined` after an activation that
   * failed. Recorded replay reads it instead of folding the recorded journal a second time.
   */
  lastState: RunState | undefined;

  /**
   * For recorded replay, which reads neither: `checkpointTexts: false` emits the
   * `checkpoint.committed` events as always without serialising the state for them, and
   * `projections: false` leaves the run's projection out of each summary (it lists every call in
   * flight: 256 of them at each activation of a foreach at concurrency 256).
   */
  constructor(
    private readonly host: CoreHost,
    private readonly options: { checkpointTexts?: boolean; projections?: boolean } = {},
  ) {}

  evict(runId: string): void {
    this.hot.delete(runId);
  }

  /** The plan and template key for a new run come with its `run-requested` fact. */
  /**
   * The plan of a new run comes with its `run-requested` fact, as the plan itself or as the
   * hash of a plan this instance already loaded (the host stores the plan with the run's first
   * commit; the engine does not send it back).
   */
  activate(request: ActivationRequest, newRun?: { plan?: ExecutionPlan; planHash?: string; templateKey?: string }): ActivationSummary {
    let run = this.hot.get(request.runId);
    let rebuilt = false;
    if (!run) {
      if (newRun) {
        const loaded = newRun.plan ? loadPlan(newRun.plan) : cachedPlan(newRun.planHash ?? '');
        const templateKey = newRun.templateKey ?? loaded.plan.root;
        if (!loaded.graphs.has(templateKey)) throw new EngineError('engine.bad-activation', `plan has no template ${templateKey}`);
        if (this.host.load(request.runId)) throw new EngineError('engine.run-exists', `run ${request.runId} already exists`);
        run = { state: undefined as unknown as RunState, loaded, templateKey };
      } else {
        run = this.rebuild(request.runId);
        rebuilt = true;
      }
    } else if (newRun) {
      throw new EngineError('engine.run-exists', `run ${request.runId} already exists`);
    }
    const graph = run.loaded.graphs.get(run.templateKey)!;
    const statusBefore = run.state ? `${run.state.status}/${run.state.pausedReason ?? ''}` : 'new';
    const activation = new Activation(run.state, run.loaded.plan, graph, run.templateKey, request, this.host, nodeSettlement);
    try {
      const terminalBefore = run.state !== undefined && isTerminalStatus(run.state.status);
      if (rebuilt && run.state.capture === 'metadata' && !terminalBefore) failWithoutPayloads(activation);
      else applyFacts(activation);
    } catch (err) {
      // The state was changed in place before the failure: forget it, the journal still has the truth.
      this.hot.delete(request.runId);
      this.lastState = undefined;
      throw err;
    }
    const state = activation.run;
    this.lastState = state;
    const summary: ActivationSummary = {
      runId: request.runId,
      seq: state.seq,
      activation: state.activation,
      events: activation.eventCount,
      ...(this.options.projections === false ? { status: state.status } : projectRun(state, graph)),
    };
    if (state.capture === 'metadata') summary.payloadsKept = false;
    if (activation.eventCount === 0) return summary;

    const expectedSeq = activation.seqBefore;
    const terminal = isTerminalStatus(state.status);
    let checkpoint: string | undefined;
    // A checkpoint when the run comes to rest (paused, or ended without `checkpoint-v3`) and after
    // an interval of events (`checkpointInterval`), so a cold activation reads at most one interval
    // of events.
    const cameToRest = (terminal ? !activation.has('checkpoint-v3') : state.status === 'paused') && `${state.status}/${state.pausedReason ?? ''}` !== statusBefore;
    if (cameToRest || state.seq + 1 - state.lastCheckpointSeq >= checkpointInterval(activation, state.lastCheckpointSeq)) {
      activation.emit('checkpoint.committed', { checkpointVersion: checkpointSchemaVersion });
      if (this.options.checkpointTexts !== false) checkpoint = JSON.stringify(activation.run.capture === 'metadata' ? checkpointWithoutPayloads(activation.run) : activation.run);
    }
    const bound = request.commitBytesMax;
    if (bound !== undefined && 3 * activation.eventChars > bound) {
      const size = activation.commitBytes();
      if (size > bound) {
        // Nothing is written: the run stays as its journal has it.
        this.hot.delete(request.runId);
        this.lastState = undefined;
        throw new EngineError('run.commit-too-large', `the commit of run ${request.runId} would hold ${size} bytes of events (at most ${bound}, commitBytesMax)`);
      }
    }
    summary.seq = activation.run.seq;
    summary.events = activation.eventCount;
    this.host.commit({
      runId: request.runId,
      expectedSeq,
      lastSeq: activation.run.seq,
      events: activation.eventTexts,
      checkpoint,
      status: state.status,
    });
    for (const r of activation.requests) this.host.request(r);
    for (const c of activation.cancels) this.host.cancel(c.invocationId, c.reason);
    run.state = activation.run;
    this.remember(request.runId, run, terminal);
    return summary;
  }

  private remember(runId: string, run: HotRun, terminal: boolean): void {
    this.hot.delete(runId);
    if (terminal) return;
    if (this.hot.size >= limits.hotRunsMax) this.hot.delete(this.hot.keys().next().value as string);
    this.hot.set(runId, run);
  }

  private rebuild(runId: string): HotRun {
    const tail = this.host.load(runId);
    if (!tail) throw new EngineError('engine.unknown-run', `run ${runId} does not exist`);
    const loaded = loadPlan(tail.plan);
    let state: RunState | undefined;
    if (tail.checkpoint) {
      state = JSON.parse(tail.checkpoint) as RunState;
      if (state.checkpointVersion !== checkpointSchemaVersion) {
        throw new EngineError('engine.checkpoint-unsupported', `run ${runId} has checkpoint version ${state.checkpointVersion}; this engine reads ${checkpointSchemaVersion}`);
      }
      ensureIndexes(state);
    }
    for (const line of tail.events) state = reduce(state, JSON.parse(line) as EventEnvelope);
    if (!state) throw new EngineError('store.corrupt', `run ${runId} has neither a checkpoint nor events`);
    if (state.seq !== tail.lastSeq) throw new EngineError('store.corrupt', `run ${runId}: rebuilt seq ${state.seq} differs from stored last seq ${tail.lastSeq}`);
    return { state, loaded, templateKey: state.templateKey };
  }
}

/**
 * Events after the previous checkpoint (at `lastCheckpointSeq`) before the next is taken:
 * `checkpointEveryEvents`, or with `checkpoint-v2` an eighth of the events before the previous
 * checkpoint, from 512 (up to seq 4,096) to 8,192 (from seq 65,536 on).
 */
export function checkpointInterval(a: Activation, lastCheckpointSeq: number): number {
  if (!a.has('checkpoint-v2')) return limits.checkpointEveryEvents;
  return Math.min(limits.checkpointIntervalMax, Math.max(limits.checkpointEveryEvents, Math.floor(lastCheckpointSeq / limits.checkpointIntervalDivisor)));
}

/**
 * The checkpoint of a `metadata` run: its state without the run input, node and item outputs,
 * foreach items and the run output. Such a checkpoint is for inspection; the run cannot continue
 * from it (see `failWithoutPayloads`).
 */
export function checkpointWithoutPayloads(state: RunState): RunState {
  const nodes: RunState['nodes'] = {};
  for (const [id, n] of Object.entries(state.nodes)) {
    const { output: _output, foreach, ...rest } = n;
    nodes[id] = foreach ? { ...rest, foreach: { ...foreach, items: [], results: [] } } : rest;
  }
  const { result: _result, ...rest } = state;
  return { ...rest, input: null, nodes };
}

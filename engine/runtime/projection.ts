// The projection of a run: what hosts need to know about it without reading its events. A pure
// function of the run state and the run's graph, computed after every activation (it travels on
// the activation summary, and the host stores it beside the run's status) and by `inspect`.
//
// A projection holds no run data of a `metadata` run except its error: no input, no call input,
// and (the caller's business, see `payloadsKept`) no result.
import type { Graph } from '../compiler/graph.js';
import type { Json } from '../json.js';
import type { ErrorInfo, Invocation, PausedReason, RunState, RunStatus } from '../state/types.js';

/** A `human.approval@1` call waiting for a person's decision. */
export interface WaitingApproval {
  nodeId: string;
  item?: number;
  invocationId: string;
  attempt: number;
  /** From the node's config: who may decide (absent: anyone), and what they are asked. */
  approvers?: Json;
  prompt?: Json;
}

/**
 * A call the engine requested whose outcome is not recorded yet (approvals included), as the run
 * state holds it: its effect class says what recovery may do with it, `requestedSeq` where its
 * recorded input is.
 */
export type CallInFlight = Invocation;

/** A node (or foreach item) whose outcome is unknown, waiting for an operator's resolution. */
export interface NeedsAttention {
  nodeId: string;
  item?: number;
}

export interface RunProjection {
  status: RunStatus;
  pausedReason?: PausedReason;
  result?: Json;
  error?: ErrorInfo;
  /** The next time (ms, run clock) the run wants an activation without any new fact. */
  wakeAt?: number;
  /** Absent when empty, as are `calls` and `attention`. */
  approvals?: WaitingApproval[];
  calls?: CallInFlight[];
  attention?: NeedsAttention[];
}

function isTerminal(status: RunStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/** The next time this run wants an activation without any new fact. */
export function nextWakeAt(state: RunState): number | undefined {
  if (isTerminal(state.status)) return undefined;
  let at = state.deadlineAt;
  for (const id of Object.keys(state.timed)) {
    const node = state.nodes[id];
    const t = node.status === 'retry-wait' ? node.retryAt : node.timeoutAt;
    if (t !== undefined && (at === undefined || t < at)) at = t;
  }
  return at;
}

/** The config of the node (or of a foreach's body) that issued a call. */
function callConfig(graph: Graph, nodeId: string, item: number | undefined): Record<string, Json> {
  const config = (graph.nodes.get(nodeId)?.config ?? {}) as Record<string, Json>;
  if (item === undefined) return config;
  const body = config.body as { config?: Record<string, Json> } | undefined;
  return body?.config ?? {};
}

export function projectRun(state: RunState, graph: Graph): RunProjection {
  const p: RunProjection = { status: state.status };
  if (state.pausedReason) p.pausedReason = state.pausedReason;
  if (state.result !== undefined) p.result = state.result;
  if (state.error !== undefined) p.error = state.error;
  const wake = nextWakeAt(state);
  if (wake !== undefined) p.wakeAt = wake;
  const approvals: WaitingApproval[] = [];
  const calls: CallInFlight[] = [];
  for (const inv of Object.values(state.inflight)) {
    const call: CallInFlight = { ...inv };
    if (call.item === undefined) delete call.item;
    calls.push(call);
    if (inv.kind !== 'approval') continue;
    const approval: WaitingApproval = { nodeId: inv.nodeId, invocationId: inv.invocationId, attempt: inv.attempt };
    if (inv.item !== undefined) approval.item = inv.item;
    const config = callConfig(graph, inv.nodeId, inv.item);
    if (config.approvers !== undefined) approval.approvers = config.approvers;
    if (config.prompt !== undefined) approval.prompt = config.prompt;
    approvals.push(approval);
  }
  const attention: NeedsAttention[] = [];
  if (state.counts['needs-attention'] > 0 || state.status === 'paused') {
    for (const [nodeId, node] of Object.entries(state.nodes)) {
      if (node.foreach && node.foreach.unknown.length > 0) for (const item of node.foreach.unknown) attention.push({ nodeId, item });
      else if (node.status === 'needs-attention') attention.push({ nodeId });
    }
  }
  if (approvals.length > 0) p.approvals = approvals;
  if (calls.length > 0) p.calls = calls;
  if (attention.length > 0) p.attention = attention;
  return p;
}

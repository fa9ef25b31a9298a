// Computes the projection of a run (engine/protocol/projection.ts): a pure function of the run
// state and the run's graph, after every activation and by `inspect`.
//
// A projection holds no run data of a `metadata` run except its error: no input, no call input,
// and (the caller's business, see `payloadsKept`) no result.
import type { Graph } from '../compiler/graph.js';
import type { Json } from '../json.js';
import type { CallInFlight, NeedsAttention, RunProjection, WaitingApproval } from '../protocol/projection.js';
import { isTerminalStatus } from '../protocol/statuses.js';
import type { RunState } from '../state/types.js';

/** The next time this run wants an activation without any new fact. */
export function nextWakeAt(state: RunState): number | undefined {
  if (isTerminalStatus(state.status)) return undefined;
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

export function projectRun(state: RunState, graph: Graph): RunProjection<Json> {
  const p: RunProjection<Json> = { status: state.status };
  if (state.pausedReason) p.pausedReason = state.pausedReason;
  if (state.result !== undefined) p.result = state.result;
  if (state.error !== undefined) p.error = state.error;
  const wake = nextWakeAt(state);
  if (wake !== undefined) p.wakeAt = wake;
  const approvals: WaitingApproval<Json>[] = [];
  const calls: CallInFlight[] = [];
  for (const inv of Object.values(state.inflight)) {
    // The state's own objects: a projection is written out as JSON at once (an `item` that is
    // `undefined` is left out of the text), never kept, so it shares what it shows.
    calls.push(inv);
    if (inv.kind !== 'approval') continue;
    const approval: WaitingApproval<Json> = { nodeId: inv.nodeId, invocationId: inv.invocationId, attempt: inv.attempt };
    if (inv.item !== undefined) approval.item = inv.item;
    const config = callConfig(graph, inv.nodeId, inv.item);
    if (config.approvers !== undefined) approval.approvers = config.approvers;
    if (config.prompt !== undefined) approval.prompt = config.prompt;
    approvals.push(approval);
  }
  const attention: NeedsAttention[] = [];
  if (state.counts['needs-attention'] > 0 || state.status === 'paused') {
    for (const [nodeId, node] of Object.entries(state.nodes)) {
      const named: Omit<NeedsAttention, 'nodeId'> = {};
      if (node.attentionSeq !== undefined) named.seq = node.attentionSeq;
      if (node.foreach && node.foreach.unknown.length > 0) for (const item of node.foreach.unknown) attention.push({ nodeId, item, ...named });
      else if (node.status === 'needs-attention') attention.push({ nodeId, ...named });
    }
  }
  if (approvals.length > 0) p.approvals = approvals;
  if (calls.length > 0) p.calls = calls;
  if (attention.length > 0) p.attention = attention;
  if (state.usage !== undefined) p.usage = state.usage;
  return p;
}

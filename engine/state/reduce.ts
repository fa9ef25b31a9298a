// Applies one journal event to a run state. All state changes of a run happen here, so a state
// rebuilt from a checkpoint plus the events after it equals the state that produced them.
import { EngineError } from '../errors.js';
import type { Json } from '../json.js';
import { checkpointSchemaVersion } from '../version.js';
import { nodeTransitions, runTransitions } from './transitions.js';
import type { EventEnvelope, NodeEventType, RunEventType } from '../protocol/events.js';
import type { NodeStatus } from '../protocol/statuses.js';
import type { AgentMessage } from '../protocol/agent.js';
import type { AgentState, NodeState, RunState } from './types.js';

function illegal(state: RunState | undefined, event: EventEnvelope, why: string): never {
  throw new EngineError('engine.illegal-transition', `${event.type} (seq ${event.seq}) ${why}`, {
    runStatus: state?.status ?? 'new',
    node: event.node ? { id: event.node.id, status: state?.nodes[event.node.id]?.status ?? null } : null,
    event: event as unknown as Json,
  });
}

export function reduce(state: RunState | undefined, event: EventEnvelope): RunState {
  if (event.type === 'run.accepted') {
    const p = event.payload;
    if (state) illegal(state, event, 'arrived for a run that already exists');
    return {
      checkpointVersion: checkpointSchemaVersion as 1,
      runId: event.runId,
      templateKey: p.templateKey,
      planHash: p.planHash,
      status: 'queued',
      seq: event.seq,
      activation: event.origin.activation,
      clock: Date.parse(event.occurredAt),
      lastCheckpointSeq: 0,
      // A `metadata` run journals the input's digest: the state has no input.
      input: p.input as Json,
      ...(p.capture === 'metadata' ? { capture: 'metadata' as const } : {}),
      authority: p.authority,
      parentRunId: p.parentRunId ?? undefined,
      correlation: event.correlation,
      deadlineAt: p.deadlineAt ?? undefined,
      nodes: Object.fromEntries(p.nodeIds.map((id) => [id, { status: 'pending', attempt: 0 } as NodeState])),
      edges: {},
      inflight: {},
      counts: { ...emptyCounts(), pending: p.nodeIds.length },
      timed: {},
    };
  }
  if (!state) return illegal(state, event, 'arrived before run.accepted');
  if (event.seq !== state.seq + 1) illegal(state, event, `is out of order: expected seq ${state.seq + 1}`);
  state.seq = event.seq;
  // Every event of one activation has the same time: read it once per activation.
  if (event.origin.activation !== state.activation || state.clock === undefined) {
    const at = Date.parse(event.occurredAt);
    if (state.clock === undefined || at > state.clock) state.clock = at;
  }
  state.activation = event.origin.activation;

  if (isRunEvent(event)) {
    const run = runTransitions[event.type];
    if (!run.from.includes(state.status)) illegal(state, event, `is not allowed while the run is ${state.status}`);
    if (run.to !== 'same') state.status = run.to;
    switch (event.type) {
      case 'run.paused':
        state.pausedReason = event.payload.reason;
        break;
      case 'run.resumed':
        state.pausedReason = undefined;
        if (event.payload.authority) state.authority = event.payload.authority;
        break;
      case 'run.cancel-requested':
        state.cancelRequested = true;
        break;
      case 'run.completed':
        state.result = event.payload.output;
        break;
      case 'run.failed':
        state.error = event.payload.error;
        state.pausedReason = undefined;
        break;
      case 'run.cancelled':
        state.pausedReason = undefined;
        break;
      default:
        break;
    }
    return state;
  }

  if (isNodeEvent(event)) {
    const nodeRule = nodeTransitions[event.type];
    const id = event.node?.id;
    const node = id === undefined ? undefined : state.nodes[id];
    if (!node) return illegal(state, event, `names unknown node ${JSON.stringify(id)}`);
    if (!nodeRule.from.includes(node.status)) illegal(state, event, `is not allowed while node ${id} is ${node.status}`);
    const before = node.status;
    if (nodeRule.to !== 'same') node.status = nodeRule.to;
    applyNodeEvent(node, event);
    if (event.type === 'node.agent-turn') addUsage(state, id!, event.payload.usage);
    if (before !== node.status) {
      state.counts[before] -= 1;
      state.counts[node.status] += 1;
    }
    if (isTimed(node)) state.timed[id!] = true;
    else delete state.timed[id!];
    return state;
  }

  switch (event.type) {
    case 'capability.requested': {
      const p = event.payload;
      // An agent's tool call asked again after an operator's `retry` is no longer unknown.
      const agent = state.nodes[event.node!.id]?.agent;
      if (agent?.unknown !== undefined) forgetUnknown(agent, p.invocationId);
      state.inflight[p.invocationId] = {
        invocationId: p.invocationId,
        nodeId: event.node!.id,
        item: p.item ?? undefined,
        attempt: event.node!.attempt,
        kind: p.kind,
        name: p.name,
        effect: p.effect,
        requestedSeq: event.seq,
      };
      break;
    }
    case 'capability.cancelled': {
      const p = event.payload;
      const inv = state.inflight[p.invocationId];
      if (!inv) illegal(state, event, `names invocation ${p.invocationId}, which is not in flight`);
      // A cancelled foreach item no longer occupies one of the node's concurrency slots.
      const f = state.nodes[inv.nodeId]?.foreach;
      if (f && inv.item !== undefined) f.running -= 1;
      delete state.inflight[p.invocationId];
      break;
    }
    case 'capability.completed':
    case 'capability.abandoned': {
      const p = event.payload;
      if (!state.inflight[p.invocationId]) illegal(state, event, `names invocation ${p.invocationId}, which is not in flight`);
      delete state.inflight[p.invocationId];
      break;
    }
    case 'edge.taken':
    case 'edge.skipped': {
      const p = event.payload;
      if (state.edges[p.edge] !== undefined) illegal(state, event, `decides edge ${p.edge} a second time`);
      state.edges[p.edge] = event.type === 'edge.taken' ? 'taken' : 'skipped';
      break;
    }
    case 'checkpoint.committed':
      state.lastCheckpointSeq = event.seq;
      break;
    case 'capability.late':
      break;
    default:
      illegal(state, event, 'is not an event type this engine knows');
  }
  return state;
}

export function emptyCounts(): Record<NodeStatus, number> {
  return { pending: 0, running: 0, waiting: 0, 'retry-wait': 0, 'needs-attention': 0, completed: 0, failed: 0, skipped: 0, cancelled: 0 };
}

function isTimed(node: NodeState): boolean {
  return ((node.status === 'running' || node.status === 'waiting') && node.timeoutAt !== undefined) || (node.status === 'retry-wait' && node.retryAt !== undefined);
}

/** Derives the indexes of a state read from a checkpoint written before they existed. */
export function ensureIndexes(state: RunState): RunState {
  if (state.counts && state.timed) return state;
  state.counts = emptyCounts();
  state.timed = {};
  for (const [id, node] of Object.entries(state.nodes)) {
    state.counts[node.status] += 1;
    if (isTimed(node)) state.timed[id] = true;
  }
  return state;
}

function isRunEvent(event: EventEnvelope): event is EventEnvelope<RunEventType> {
  return Object.prototype.hasOwnProperty.call(runTransitions, event.type);
}

function isNodeEvent(event: EventEnvelope): event is EventEnvelope<NodeEventType> {
  return Object.prototype.hasOwnProperty.call(nodeTransitions, event.type);
}

function applyNodeEvent(node: NodeState, event: EventEnvelope<NodeEventType>): void {
  switch (event.type) {
    case 'node.started': {
      const p = event.payload;
      node.attempt = event.node!.attempt;
      node.error = undefined;
      node.retryAt = undefined;
      node.timeoutAt = p.timeoutAt ?? undefined;
      node.invocationId = event.node!.invocationId;
      // Every attempt of an agent loop starts its conversation again.
      if (node.agent !== undefined) delete node.agent;
      if (p.foreach) {
        node.foreach = {
          // A `metadata` run journals the digest and count of its items, not the items.
          items: p.foreach.items ?? [],
          maxConcurrency: p.foreach.maxConcurrency,
          failurePolicy: p.foreach.failurePolicy,
          next: 0,
          running: 0,
          done: 0,
          results: new Array(p.foreach.items?.length ?? (p.foreach.itemsCount as number)).fill(null),
          failures: [],
          attempts: {},
          unknown: [],
        };
      }
      break;
    }
    case 'node.output-committed':
      node.output = event.payload.output;
      node.timeoutAt = undefined;
      break;
    case 'node.failed':
      node.error = event.payload.error;
      node.timeoutAt = undefined;
      break;
    case 'node.retry-scheduled':
      node.error = event.payload.error;
      node.retryAt = event.payload.retryAt;
      node.timeoutAt = undefined;
      break;
    case 'node.needs-attention': {
      const p = event.payload;
      if (node.foreach && typeof p.item === 'number') {
        node.foreach.running -= 1;
        node.foreach.unknown.push(p.item);
      }
      if (node.agent) (node.agent.unknown ??= []).push({ invocationId: p.invocationId, effect: p.evidence.effect });
      break;
    }
    case 'node.item-started': {
      const p = event.payload;
      const f = node.foreach!;
      // Only a later attempt is kept: an item without an entry is on its first (read as `?? 1`),
      // so a foreach of many items does not carry one entry per item in every checkpoint.
      const key = String(p.index);
      if (event.node!.attempt !== 1 || key in f.attempts) f.attempts[key] = event.node!.attempt;
      if (p.index === f.next) f.next += 1;
      const wasUnknown = f.unknown.indexOf(p.index);
      if (wasUnknown >= 0) f.unknown.splice(wasUnknown, 1);
      f.running += 1;
      break;
    }
    case 'node.item-committed': {
      const p = event.payload;
      const f = node.foreach!;
      // A `metadata` run journals the output's digest: the item's result is not kept.
      f.results[p.index] = p.output as Json;
      f.running -= p.fromUnknown ? 0 : 1;
      f.done += 1;
      if (p.fromUnknown) f.unknown.splice(f.unknown.indexOf(p.index), 1);
      break;
    }
    case 'node.item-failed': {
      const p = event.payload;
      const f = node.foreach!;
      if (p.final) {
        f.failures.push({ index: p.index, error: p.error });
        f.done += 1;
      }
      f.running -= p.fromUnknown ? 0 : 1;
      if (p.fromUnknown) f.unknown.splice(f.unknown.indexOf(p.index), 1);
      break;
    }
    case 'node.agent-turn': {
      const p = event.payload;
      const agent = (node.agent ??= { turn: 0, messages: [], usage: { inputTokens: 0, outputTokens: 0 } });
      agent.turn = p.turn;
      // A `metadata` run journals the message's digest: its conversation lives in the hot run only.
      if (p.message !== undefined) agent.messages.push(p.message);
      agent.usage = { inputTokens: agent.usage.inputTokens + p.usage.inputTokens, outputTokens: agent.usage.outputTokens + p.usage.outputTokens };
      break;
    }
    case 'node.agent-tool-result': {
      const p = event.payload;
      const message: AgentMessage = { role: 'tool', toolCallId: p.toolCallId, toolName: p.toolName };
      if (p.error !== undefined) message.error = p.error;
      else message.output = (p.output ?? null) as Json;
      node.agent!.messages.push(message);
      if (node.agent!.unknown !== undefined && event.node!.invocationId !== undefined) forgetUnknown(node.agent!, event.node!.invocationId);
      break;
    }
    case 'node.agent-answer-invalid':
      node.agent!.messages.push({ role: 'user', content: invalidAnswerText(event.payload.problem) });
      break;
    default:
      break;
  }
}

/** Sums a model turn's tokens into the run's usage and its node's. */
function addUsage(state: RunState, nodeId: string, usage: { inputTokens: number; outputTokens: number }): void {
  const total = (state.usage ??= { inputTokens: 0, outputTokens: 0, turns: 0, nodes: {} });
  const node = (total.nodes[nodeId] ??= { inputTokens: 0, outputTokens: 0, turns: 0 });
  for (const u of [total, node]) {
    u.inputTokens += usage.inputTokens;
    u.outputTokens += usage.outputTokens;
    u.turns += 1;
  }
}

function forgetUnknown(agent: AgentState, invocationId: string): void {
  const rest = agent.unknown!.filter((u) => u.invocationId !== invocationId);
  if (rest.length > 0) agent.unknown = rest;
  else delete agent.unknown;
}

/** What the model is told when its final answer did not match the node's `outputSchema`. */
export function invalidAnswerText(problem: string): string {
  return `Your answer does not match the required output schema: ${problem}. Answer again with JSON text that matches it.`;
}

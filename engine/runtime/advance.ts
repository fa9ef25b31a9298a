// The decisions of the engine: which nodes start, skip, complete, fail, retry or wait, and when
// the run itself pauses, resumes, completes or fails. Every decision is an event (`emit`). What a
// node does when it starts, and how its calls settle, is its kind's (engine/nodes/).
import { checkAgainst } from '../compiler/schemas.js';
import { clip, jsonProblem, type Json } from '../json.js';
import { limits } from '../limits.js';
import type { NodeSettlement } from '../nodes/kind.js';
import type { AttemptEvidence, ErrorInfo, PayloadOf } from '../protocol/events.js';
import { isTerminalStatus } from '../protocol/statuses.js';
import type { NodeSpec } from '../protocol/template.js';
import type { Invocation } from '../state/types.js';
import type { Activation } from './activation.js';
import { missingBinding, resolveInputs } from './bindings.js';

const activeStatuses = new Set(['running', 'waiting', 'retry-wait', 'needs-attention']);

export function isTerminal(a: Activation): boolean {
  return isTerminalStatus(a.run.status);
}

/**
 * Runs the frontier until nothing more can happen in this activation. Only nodes whose incoming
 * edges changed are looked at, smallest topological position first, which decides them in the
 * same order as a scan of the whole graph would, at a cost independent of the graph's size.
 */
export function advance(a: Activation): void {
  if (isTerminal(a)) return;
  processDeadlines(a);
  const position = a.graph.position;
  while (a.candidates.size > 0 && !isTerminal(a)) {
    let next = '';
    let best = Infinity;
    for (const id of a.candidates) {
      const p = position.get(id)!;
      if (p < best) {
        best = p;
        next = id;
      }
    }
    a.candidates.delete(next);
    if (a.run.nodes[next].status !== 'pending') continue;
    const incoming = a.graph.incoming.get(next)!;
    if (incoming.length > 0 && !incoming.every((i) => a.run.edges[i] !== undefined)) continue;
    if (incoming.length === 0 || incoming.some((i) => a.run.edges[i] === 'taken')) startNode(a, a.graph.nodes.get(next)!, 1);
    else skipNode(a, next);
  }
  settleRun(a);
}

/** Timed nodes in topological order (the order a scan of the graph would meet them). */
function timedNodes(a: Activation): string[] {
  const ids = Object.keys(a.run.timed);
  if (ids.length > 1) ids.sort((x, y) => a.graph.position.get(x)! - a.graph.position.get(y)!);
  return ids;
}

function processDeadlines(a: Activation): void {
  if (a.run.deadlineAt !== undefined && a.now >= a.run.deadlineAt) {
    failRun(a, { code: 'run.timeout', message: `the run passed its time limit at ${new Date(a.run.deadlineAt).toISOString()}` });
    return;
  }
  for (const id of timedNodes(a)) {
    const node = a.run.nodes[id];
    if ((node.status === 'running' || node.status === 'waiting') && node.timeoutAt !== undefined && a.now >= node.timeoutAt) {
      timeOut(a, id);
    } else if (node.status === 'retry-wait' && node.retryAt !== undefined && a.now >= node.retryAt) {
      startNode(a, a.graph.nodes.get(id)!, node.attempt + 1);
    }
    if (isTerminal(a)) return;
  }
}

/**
 * A node passed its time limit. A time limit says nothing about whether a call took effect, so
 * with `effects-v2` only safe work (read-only or idempotent) is cancelled and may be retried:
 *
 * | node                                   | in flight          | decision                                             |
 * | -------------------------------------- | ------------------ | ---------------------------------------------------- |
 * | a call                                 | safe or nothing    | cancel, fail `node.timeout` (retryable)              |
 * | a call                                 | effect `unknown`   | abandon the call (its outcome is unknown), abort it, |
 * |                                        |                    | node needs-attention: an operator resolves it        |
 * | foreach whose body is safe             | any                | cancel the items, fail `node.timeout` (retryable)    |
 * | foreach whose body's effect is unknown | any                | cancel the items, fail `node.timeout`, never retried |
 *
 * A foreach is never retried on a guess because its retry runs every item again, those that
 * took effect included; its items in flight are cancelled with the run failing, as before.
 */
function timeOut(a: Activation, id: string): void {
  const message = `node ${id} passed its time limit`;
  if (!a.has('effects-v2')) {
    cancelInvocations(a, (inv) => inv.nodeId === id, 'node timed out');
    failNode(a, id, { code: 'node.timeout', message, retryable: true });
    return;
  }
  const spec = a.graph.nodes.get(id)!;
  const kind = a.kindOf(spec.uses);
  if (kind.timeOut) {
    kind.timeOut(a, spec, message);
    return;
  }
  const unknown = Object.values(a.run.inflight).filter((inv) => inv.nodeId === id && inv.effect === 'unknown');
  if (unknown.length === 0) {
    cancelInvocations(a, (inv) => inv.nodeId === id, 'node timed out');
    failNode(a, id, { code: 'node.timeout', message, retryable: true });
    return;
  }
  for (const inv of unknown) abandonUnknown(a, inv, `node ${id} passed its time limit before the outcome was recorded; it is unknown whether the call took effect`, 'timeout');
}

/**
 * The outcome of a call with an unknown effect is unknown (a restart, a time limit): record
 * that, and let an operator decide. The call is aborted when this host still runs it; whatever
 * it returns afterwards is `capability.late` evidence.
 */
export function abandonUnknown(a: Activation, inv: Invocation, reason: string, cause: 'restart' | 'timeout' | 'unavailable', attempt?: AttemptEvidence): void {
  const ref = { id: inv.nodeId, attempt: inv.attempt, invocationId: inv.invocationId, item: inv.item };
  a.emit('capability.abandoned', { invocationId: inv.invocationId, reason }, ref);
  const evidence: PayloadOf<'node.needs-attention'>['evidence'] = { kind: inv.kind, name: inv.name, effect: inv.effect, requestedSeq: inv.requestedSeq, ...(attempt ? { attempt } : {}) };
  if (cause === 'timeout') {
    evidence.reason = cause;
    a.cancels.push({ invocationId: inv.invocationId, reason });
  }
  // The host said it did not carry the call out: nothing to cancel, nothing unknown about it.
  if (cause === 'unavailable') evidence.reason = cause;
  a.emit('node.needs-attention', { invocationId: inv.invocationId, item: inv.item, evidence }, { id: inv.nodeId, attempt: a.run.nodes[inv.nodeId].attempt });
}

export function startNode(a: Activation, spec: NodeSpec, attempt: number): void {
  const kind = a.kindOf(spec.uses);
  const timeoutAt = spec.timeoutMs !== undefined ? a.now + spec.timeoutMs : undefined;
  if (!kind.inputsMayBeAbsent && spec.inputs !== undefined && a.has('bindings-v2')) {
    const missing = missingBinding(spec.inputs, a.run, `node ${spec.id}`);
    if (missing) {
      a.emit('node.started', {}, { id: spec.id, attempt });
      failNode(a, spec.id, missing);
      return;
    }
  }
  kind.start(a, spec, attempt, timeoutAt);
}

/**
 * Whether a retry policy may start another attempt after `error`. An error that came back from a
 * call whose effect is `unknown` proves that nothing happened only when the tool says so
 * (`retryable: true`); with `effects-v2` any other such error is final.
 */
export function isRetryable(a: Activation, error: ErrorInfo, retryOn: string[] | undefined, unknownEffect: boolean): boolean {
  if (error.retryable === false) return false;
  if (unknownEffect && error.retryable !== true && a.has('effects-v2')) return false;
  return retryOn === undefined || retryOn.includes(error.code);
}

export function outputProblem(output: Json, schema?: Json): string | undefined {
  const shape = jsonProblem(output, limits.nodeOutputDepthMax);
  if (shape) return `the output is not plain JSON: ${shape}`;
  const size = JSON.stringify(output).length;
  if (size > limits.nodeOutputBytesMax) return `the output has ${size} characters (at most ${limits.nodeOutputBytesMax})`;
  if (schema !== undefined) {
    const problems = checkAgainst(schema, output);
    if (problems.length > 0) return `the output does not match its schema: ${problems.map((p) => `${p.pointer || '/'} ${p.message}`).join('; ')}`;
  }
  return undefined;
}

/** Validates and commits a node's output, then decides its outgoing edges. */
export function commitOutput(a: Activation, id: string, output: Json, extraSchema?: Json): void {
  const spec = a.graph.nodes.get(id)!;
  const node = a.run.nodes[id];
  const problem = outputProblem(output, spec.expects) ?? (extraSchema !== undefined ? outputProblem(output, extraSchema) : undefined);
  if (problem) {
    failNode(a, id, { code: 'node.output-invalid', message: clip(`node ${id}: ${problem}`), retryable: a.kindOf(spec.uses).invalidOutputRetryable === true });
    return;
  }
  a.emit('node.output-committed', { output }, { id, attempt: node.attempt, invocationId: node.invocationId });
  const port = a.kindOf(spec.uses).portOf?.(output);
  for (const i of a.graph.outgoing.get(id)!) {
    const edge = a.graph.edges[i];
    const taken = port === undefined || edge.port === port;
    a.emit(taken ? 'edge.taken' : 'edge.skipped', { edge: i, from: edge.from, to: edge.to, port: edge.port });
  }
}

function skipNode(a: Activation, id: string): void {
  a.emit('node.skipped', {}, { id, attempt: 0 });
  for (const i of a.graph.outgoing.get(id)!) {
    const edge = a.graph.edges[i];
    a.emit('edge.skipped', { edge: i, from: edge.from, to: edge.to, port: edge.port });
  }
}

/**
 * A node failed: retry it when its policy allows, else fail the run. `unknownEffect`: `error` came
 * back from a call whose effect is `unknown` (see `isRetryable`).
 */
export function failNode(a: Activation, id: string, error: ErrorInfo, options: { unknownEffect?: boolean } = {}): void {
  const spec = a.graph.nodes.get(id)!;
  const node = a.run.nodes[id];
  const retry = spec.retry;
  if (retry && node.attempt < retry.maxAttempts && isRetryable(a, error, retry.retryOn, options.unknownEffect === true) && (node.status === 'running' || node.status === 'waiting')) {
    const backoff = Math.min((retry.backoffMs ?? 0) * Math.pow(retry.backoffMultiplier ?? 2, node.attempt - 1), limits.retryBackoffMsMax);
    a.emit('node.retry-scheduled', { error: error, retryAt: a.now + Math.round(backoff) }, { id, attempt: node.attempt });
    if (backoff === 0) startNode(a, spec, node.attempt + 1);
    return;
  }
  a.emit('node.failed', { error: error }, { id, attempt: node.attempt });
  failRun(a, { code: 'node.failed', message: clip(`node ${id} failed: ${error.code}: ${error.message}`), detail: { nodeId: id, error: error } });
}

export function cancelInvocations(a: Activation, which: (inv: Invocation) => boolean, reason: string): void {
  for (const inv of Object.values(a.run.inflight)) {
    if (!which(inv)) continue;
    a.emit('capability.cancelled', { invocationId: inv.invocationId, reason }, { id: inv.nodeId, attempt: inv.attempt, invocationId: inv.invocationId, item: inv.item });
    a.cancels.push({ invocationId: inv.invocationId, reason });
  }
}

export function failRun(a: Activation, error: ErrorInfo): void {
  if (isTerminal(a)) return;
  cancelInvocations(a, () => true, 'run failed');
  a.emit('run.failed', { error: error });
}

export function cancelRun(a: Activation, reason: string, by: string): void {
  a.emit('run.cancel-requested', { reason, by });
  cancelInvocations(a, () => true, 'run cancelled');
  for (const id of a.graph.order) {
    const node = a.run.nodes[id];
    if (activeStatuses.has(node.status)) a.emit('node.cancelled', { reason }, { id, attempt: node.attempt });
  }
  a.emit('run.cancelled', { reason, by });
}

function settleRun(a: Activation): void {
  if (isTerminal(a)) return;
  const c = a.run.counts;
  const unsettled = c.pending + c.running + c.waiting + c['retry-wait'] + c['needs-attention'];
  if (unsettled === 0) {
    completeRun(a);
    return;
  }
  if (c.running + c['retry-wait'] > 0) {
    if (a.run.status === 'paused') a.emit('run.resumed', { reason: 'work resumed' });
    return;
  }
  const reason = c['needs-attention'] > 0 ? 'needs_attention' : c.waiting > 0 ? 'approval' : 'waiting';
  if (a.run.status !== 'paused' || a.run.pausedReason !== reason) a.emit('run.paused', { reason });
}

function completeRun(a: Activation): void {
  const spec = a.graph.template.spec;
  const ends = a.graph.order.filter((id) => a.kindOf(a.graph.nodes.get(id)!.uses).role === 'end' && a.run.nodes[id].status === 'completed');
  if (ends.length === 0) {
    failRun(a, { code: 'run.no-end-reached', message: 'every path to a core.end@1 node was skipped' });
    return;
  }
  const missing = spec.outputs && a.has('bindings-v2') ? missingBinding(spec.outputs, a.run, 'the run output') : undefined;
  if (missing) {
    failRun(a, missing);
    return;
  }
  const output: Json = spec.outputs ? resolveInputs(spec.outputs, a.run) : (a.run.nodes[ends[0]].output ?? null);
  if (spec.outputSchema !== undefined) {
    const problems = checkAgainst(spec.outputSchema, output);
    if (problems.length > 0) {
      failRun(a, { code: 'run.output-invalid', message: clip(`the run output does not match outputSchema: ${problems.map((p) => `${p.pointer || '/'} ${p.message}`).join('; ')}`) });
      return;
    }
  }
  if (a.run.status === 'paused') a.emit('run.resumed', { reason: 'completing' });
  a.emit('run.completed', { output });
}

/** The settlement operations the node kinds call, handed to them on each activation. */
export const nodeSettlement: NodeSettlement = { commitOutput, failNode, cancelInvocations, isRetryable, outputProblem };

// The decisions of the engine: which nodes start, skip, complete, fail, retry or wait, and when
// the run itself pauses, resumes, completes or fails. Every decision is an event (`emit`).
import { checkAgainst } from '../compiler/schemas.js';
import { clip, jsonProblem, type Json } from '../json.js';
import { limits } from '../limits.js';
import { capabilityCovers, impliedCapability, nodeDefinitions } from '../protocol/node-definitions.js';
import type { NodeSpec } from '../protocol/template.js';
import type { ErrorInfo, PayloadOf } from '../protocol/events.js';
import { isTerminalStatus, type Effect } from '../protocol/statuses.js';
import type { Invocation } from '../state/types.js';
import type { Activation, GatewayRequest } from './activation.js';
import { evaluateCondition, missingBinding, resolveBinding, resolveInputs } from './bindings.js';

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
  if (spec.uses === 'core.foreach@1') {
    const body = (spec.config as Record<string, any>).body as { uses: string; config: Record<string, any> };
    const safe = effectOf(spec, body.uses, body.config ?? {}) !== 'unknown';
    cancelInvocations(a, (inv) => inv.nodeId === id, 'node timed out');
    failNode(a, id, { code: 'node.timeout', message: safe ? message : `${message}; its items have effects that are not known to be safe to repeat, so it is not retried`, retryable: safe });
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
export function abandonUnknown(a: Activation, inv: Invocation, reason: string, cause: 'restart' | 'timeout'): void {
  const ref = { id: inv.nodeId, attempt: inv.attempt, invocationId: inv.invocationId, item: inv.item };
  a.emit('capability.abandoned', { invocationId: inv.invocationId, reason }, ref);
  const evidence: PayloadOf<'node.needs-attention'>['evidence'] = { kind: inv.kind, name: inv.name, effect: inv.effect, requestedSeq: inv.requestedSeq };
  if (cause === 'timeout') {
    evidence.reason = cause;
    a.cancels.push({ invocationId: inv.invocationId, reason });
  }
  a.emit('node.needs-attention', { invocationId: inv.invocationId, item: inv.item, evidence }, { id: inv.nodeId, attempt: a.run.nodes[inv.nodeId].attempt });
}

/** The next time this run wants an activation without any new fact. */
export function wakeAt(a: Activation): number | undefined {
  if (isTerminal(a)) return undefined;
  let at = a.run.deadlineAt;
  for (const id of Object.keys(a.run.timed)) {
    const node = a.run.nodes[id];
    const t = node.status === 'retry-wait' ? node.retryAt : node.timeoutAt;
    if (t !== undefined && (at === undefined || t < at)) at = t;
  }
  return at;
}

export function startNode(a: Activation, spec: NodeSpec, attempt: number): void {
  const config = (spec.config ?? {}) as Record<string, any>;
  const timeoutAt = spec.timeoutMs !== undefined ? a.now + spec.timeoutMs : undefined;
  // A condition may test whether a path exists (`exists`, `not-exists`): its operands may be absent.
  if (spec.uses !== 'core.condition@1' && spec.inputs !== undefined && a.has('bindings-v2')) {
    const missing = missingBinding(spec.inputs, a.run, `node ${spec.id}`);
    if (missing) {
      a.emit('node.started', {}, { id: spec.id, attempt });
      failNode(a, spec.id, missing);
      return;
    }
  }
  switch (spec.uses) {
    case 'core.start@1':
      a.emit('node.started', {}, { id: spec.id, attempt });
      commitOutput(a, spec.id, a.run.input);
      return;
    case 'core.end@1': {
      a.emit('node.started', {}, { id: spec.id, attempt });
      commitOutput(a, spec.id, resolveInputs(spec.inputs, a.run));
      return;
    }
    case 'core.condition@1': {
      a.emit('node.started', {}, { id: spec.id, attempt });
      const left = spec.inputs?.left ? resolveBinding(spec.inputs.left, a.run) : undefined;
      const right = spec.inputs?.right ? resolveBinding(spec.inputs.right, a.run) : undefined;
      commitOutput(a, spec.id, { result: evaluateCondition(config.operator, left, right) });
      return;
    }
    case 'core.script@1': {
      a.emit('node.started', {}, { id: spec.id, attempt });
      const outcome = runScript(a, config, resolveInputs(spec.inputs, a.run));
      if (outcome.ok) commitOutput(a, spec.id, outcome.output);
      else failNode(a, spec.id, outcome.error);
      return;
    }
    case 'core.foreach@1':
      startForeach(a, spec, attempt, timeoutAt);
      return;
    default:
      startCapability(a, spec, attempt, timeoutAt);
  }
}

function runScript(a: Activation, config: Record<string, any>, input: Json): { ok: true; output: Json } | { ok: false; error: ErrorInfo } {
  const limitsOfNode = config.limits ?? {};
  const outcome = a.scripts.evaluate(config.source, JSON.stringify(input), {
    fuel: Math.min(limitsOfNode.fuel ?? limits.scriptFuelDefault, limits.scriptFuelMax),
    memoryBytes: Math.min(limitsOfNode.memoryBytes ?? limits.scriptMemoryBytesDefault, limits.scriptMemoryBytesMax),
    stackBytes: limits.scriptStackBytesDefault,
    outputBytes: limits.scriptOutputBytesDefault,
  });
  if (!outcome.ok) {
    const e = outcome.error;
    return { ok: false, error: { code: e.code, message: clip(e.line ? `line ${e.line}: ${e.message}` : e.message), retryable: false } };
  }
  try {
    return { ok: true, output: JSON.parse(outcome.output) as Json };
  } catch {
    return { ok: false, error: { code: 'script.not-json', message: 'the script returned text that is not JSON', retryable: false } };
  }
}

export function grantedCapability(a: Activation, spec: NodeSpec, uses: string, config: Record<string, Json>): string | ErrorInfo {
  const capability = impliedCapability(uses, config)!;
  const declared = spec.requires ?? [capability];
  const allowed = a.graph.template.spec.requires ?? [];
  const scopes = a.run.authority.scopes;
  if (!declared.some((d) => capabilityCovers(d, capability))) {
    return { code: 'capability.denied', message: `node ${spec.id} does not declare ${capability}`, retryable: false };
  }
  if (!allowed.some((p) => capabilityCovers(p, capability))) {
    return { code: 'capability.denied', message: `${capability} is not in the template's requires`, retryable: false };
  }
  if (!scopes.some((p) => capabilityCovers(p, capability))) {
    return { code: 'capability.denied', message: `authority ${a.run.authority.id} does not grant ${capability}`, retryable: false };
  }
  return capability;
}

function effectOf(spec: NodeSpec, uses: string, config: Record<string, any>): Effect {
  if (spec.readOnly) return 'read-only';
  if (uses === 'human.approval@1' || uses === 'workflow.call@1') return 'idempotent';
  if (uses === 'tool.call@1' && config.idempotent === true) return 'idempotent';
  return 'unknown';
}

export function requestFor(a: Activation, spec: NodeSpec, uses: string, config: Record<string, any>, invocationId: string, attempt: number, input: Json, item?: number): GatewayRequest {
  const kind = nodeDefinitions.get(uses)!.capability!;
  const name = kind === 'tool' ? config.tool : kind === 'agent' ? config.agent : kind === 'workflow' ? `${config.workflow.id}@${config.workflow.revision}` : spec.id;
  const extra: Record<string, Json> = {};
  if (kind === 'agent') {
    if (config.instructions !== undefined) extra.instructions = config.instructions;
    if (config.outputSchema !== undefined) extra.outputSchema = config.outputSchema;
  }
  if (config.credentialRef !== undefined) extra.credentialRef = config.credentialRef;
  if (config.connectionRef !== undefined) extra.connectionRef = config.connectionRef;
  if (kind === 'approval') {
    if (config.prompt !== undefined) extra.prompt = config.prompt;
    if (config.approvers !== undefined) extra.approvers = config.approvers;
  }
  const authority = { id: a.run.authority.id, scopes: [...a.run.authority.scopes] };
  const request: GatewayRequest = { invocationId, runId: a.run.runId, nodeId: spec.id, attempt, kind, name, input, effect: effectOf(spec, uses, config), authority };
  if (item !== undefined) request.item = item;
  if (Object.keys(extra).length > 0) request.config = extra;
  const timeoutAt = a.run.nodes[spec.id].timeoutAt;
  if (timeoutAt !== undefined) request.deadlineAt = timeoutAt;
  return request;
}

export function stageRequest(a: Activation, request: GatewayRequest, reissued = false): void {
  a.emit(
    'capability.requested',
    { invocationId: request.invocationId, kind: request.kind, name: request.name, effect: request.effect, input: request.input, item: request.item, reissued: reissued || undefined },
    { id: request.nodeId, attempt: request.attempt, invocationId: request.invocationId, item: request.item },
  );
  a.requests.push(reissued ? { ...request, reissued: true } : request);
}

function startCapability(a: Activation, spec: NodeSpec, attempt: number, timeoutAt: number | undefined): void {
  const config = (spec.config ?? {}) as Record<string, any>;
  const invocationId = a.deriveId('iv', a.run.runId, spec.id, attempt, '');
  a.emit('node.started', { timeoutAt }, { id: spec.id, attempt, invocationId });
  const granted = grantedCapability(a, spec, spec.uses, config);
  if (typeof granted !== 'string') {
    failNode(a, spec.id, granted);
    return;
  }
  stageRequest(a, requestFor(a, spec, spec.uses, config, invocationId, attempt, resolveInputs(spec.inputs, a.run)));
  if (spec.uses === 'human.approval@1') a.emit('node.waiting', { reason: 'approval' }, { id: spec.id, attempt, invocationId });
}

function startForeach(a: Activation, spec: NodeSpec, attempt: number, timeoutAt: number | undefined): void {
  const config = (spec.config ?? {}) as Record<string, any>;
  const items = spec.inputs?.items ? resolveBinding(spec.inputs.items, a.run) : undefined;
  const maxItems = Math.min(config.maxItems ?? limits.foreachItemsDefault, limits.foreachItemsMax);
  if (!Array.isArray(items)) {
    a.emit('node.started', { timeoutAt }, { id: spec.id, attempt });
    failNode(a, spec.id, { code: 'foreach.items-not-array', message: `the "items" input of ${spec.id} is ${items === undefined ? 'missing' : typeof items}, not an array`, retryable: false });
    return;
  }
  if (items.length > maxItems) {
    a.emit('node.started', { timeoutAt }, { id: spec.id, attempt });
    failNode(a, spec.id, { code: 'foreach.too-many-items', message: `${items.length} items exceed maxItems ${maxItems}`, retryable: false });
    return;
  }
  const foreach = {
    items,
    maxConcurrency: Math.min(config.maxConcurrency ?? limits.foreachConcurrencyDefault, limits.foreachConcurrencyMax),
    failurePolicy: config.failurePolicy ?? 'fail-fast',
  };
  a.emit('node.started', { timeoutAt, foreach }, { id: spec.id, attempt });
  dispatchItems(a, spec);
}

/** Starts items up to the concurrency bound. Iterative: script items settle inside the loop. */
function dispatchItems(a: Activation, spec: NodeSpec): void {
  const node = a.run.nodes[spec.id];
  const f = node.foreach!;
  while (node.status === 'running' && f.running < f.maxConcurrency && f.next < f.items.length) startItem(a, spec, f.next, 1);
  finishForeachIfDone(a, spec.id);
}

function startItem(a: Activation, spec: NodeSpec, index: number, itemAttempt: number): void {
  const node = a.run.nodes[spec.id];
  const body = (spec.config as Record<string, any>).body as { uses: string; config: Record<string, any> };
  const input = node.foreach!.items[index];
  const invocationId = a.deriveId('iv', a.run.runId, spec.id, node.attempt, `${index}:${itemAttempt}`);
  const ref = { id: spec.id, attempt: itemAttempt, invocationId, item: index };
  a.emit('node.item-started', { index }, ref);
  if (body.uses === 'core.script@1') {
    const outcome = runScript(a, body.config, input);
    if (outcome.ok) settleItem(a, spec, index, itemAttempt, { ok: true, output: outcome.output });
    else settleItem(a, spec, index, itemAttempt, { ok: false, error: outcome.error });
    return;
  }
  const granted = grantedCapability(a, spec, body.uses, body.config);
  if (typeof granted !== 'string') {
    settleItem(a, spec, index, itemAttempt, { ok: false, error: granted });
    return;
  }
  stageRequest(a, requestFor(a, spec, body.uses, body.config, invocationId, itemAttempt, input, index));
}

/**
 * Settles one foreach item. `unknownEffect`: the outcome is the error of a call whose effect is
 * `unknown`, which (with `effects-v2`) is retried only when the error says `retryable: true`.
 */
export function settleItem(a: Activation, spec: NodeSpec, index: number, itemAttempt: number, outcome: { ok: true; output: Json } | { ok: false; error: ErrorInfo }, fromUnknown = false, unknownEffect = false): void {
  const ref = { id: spec.id, attempt: itemAttempt, item: index };
  let result = outcome;
  if (result.ok) {
    const problem = outputProblem(result.output);
    if (problem) result = { ok: false, error: { code: 'node.output-invalid', message: `item ${index}: ${problem}`, retryable: true } };
  }
  if (result.ok) {
    a.emit('node.item-committed', { index, output: result.output, fromUnknown: fromUnknown || undefined }, ref);
  } else {
    const retry = spec.retry;
    const canRetry = retry !== undefined && itemAttempt < retry.maxAttempts && isRetryable(a, result.error, retry.retryOn, unknownEffect && outcome.ok === false);
    a.emit('node.item-failed', { index, error: result.error, final: !canRetry, fromUnknown: fromUnknown || undefined }, ref);
    if (canRetry) {
      startItem(a, spec, index, itemAttempt + 1);
      return;
    }
    if (a.run.nodes[spec.id].foreach!.failurePolicy === 'fail-fast') {
      cancelInvocations(a, (inv) => inv.nodeId === spec.id, `item ${index} failed`);
      failNode(a, spec.id, { code: 'foreach.item-failed', message: `item ${index} failed: ${result.error.message}`, retryable: false, detail: { index, error: result.error } });
    }
  }
}

/** An item's outcome came back from the gateway: settle it, then start what may start. */
export function settleItemAndContinue(a: Activation, spec: NodeSpec, index: number, itemAttempt: number, outcome: { ok: true; output: Json } | { ok: false; error: ErrorInfo }, unknownEffect = false): void {
  settleItem(a, spec, index, itemAttempt, outcome, false, unknownEffect);
  if (a.run.nodes[spec.id].status === 'running') dispatchItems(a, spec);
}

function finishForeachIfDone(a: Activation, id: string): void {
  const node = a.run.nodes[id];
  const f = node.foreach!;
  if (node.status !== 'running' || f.done < f.items.length || f.running > 0) return;
  commitOutput(a, id, { results: f.results, failures: f.failures });
}

/**
 * Whether a retry policy may start another attempt after `error`. An error that came back from a
 * call whose effect is `unknown` proves that nothing happened only when the tool says so
 * (`retryable: true`); with `effects-v2` any other such error is final.
 */
function isRetryable(a: Activation, error: ErrorInfo, retryOn: string[] | undefined, unknownEffect: boolean): boolean {
  if (error.retryable === false) return false;
  if (unknownEffect && error.retryable !== true && a.has('effects-v2')) return false;
  return retryOn === undefined || retryOn.includes(error.code);
}

function outputProblem(output: Json, schema?: Json): string | undefined {
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
    failNode(a, id, { code: 'node.output-invalid', message: clip(`node ${id}: ${problem}`), retryable: spec.uses === 'agent.run@1' });
    return;
  }
  a.emit('node.output-committed', { output }, { id, attempt: node.attempt, invocationId: node.invocationId });
  const port = spec.uses === 'core.condition@1' ? String((output as { result: boolean }).result) : undefined;
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
  const ends = a.graph.order.filter((id) => a.graph.nodes.get(id)!.uses === 'core.end@1' && a.run.nodes[id].status === 'completed');
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

/** An operator settled one foreach item whose outcome was unknown. */
export function resolveUnknownItem(a: Activation, spec: NodeSpec, index: number, resolution: string, output: Json, failure: string): void {
  const f = a.run.nodes[spec.id].foreach!;
  const attempt = f.attempts[String(index)] ?? 1;
  if (resolution === 'succeeded') settleItem(a, spec, index, attempt, { ok: true, output }, true);
  else if (resolution === 'fail') settleItem(a, spec, index, attempt, { ok: false, error: { code: 'node.resolved-failed', message: failure, retryable: false } }, true);
  else startItem(a, spec, index, attempt + 1);
  const node = a.run.nodes[spec.id];
  if (node.status === 'needs-attention' && node.foreach!.unknown.length === 0) {
    a.emit('node.resumed', { reason: 'every unknown item was resolved' }, { id: spec.id, attempt: node.attempt });
    dispatchItems(a, spec);
  }
}

/** After an operator chose `retry`: start again every foreach item whose outcome was unknown. */
export function retryUnknownItems(a: Activation, spec: NodeSpec): void {
  const f = a.run.nodes[spec.id].foreach!;
  for (const index of [...f.unknown]) startItem(a, spec, index, (f.attempts[String(index)] ?? 1) + 1);
  dispatchItems(a, spec);
}

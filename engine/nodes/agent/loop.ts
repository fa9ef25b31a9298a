// The agent loop in the engine (`agent.run@1` with a `model`, docs/agents.md "The loop").
//
//   node.started ─► model turn n requested ─► capability.completed ─► node.agent-turn
//        ├─ tool calls: each allowed one requested (a refused one: node.agent-tool-result, refused)
//        │     └─ every call of the turn settled (node.agent-tool-result) ─► model turn n+1
//        └─ no tool calls: the final answer ─► output committed, or node.agent-answer-invalid
//                                               ─► model turn n+1
//
// The conversation of turn n+1 is folded (state/reduce.ts) from the node's own agent events and
// the node's input: nothing of a request is read back, so a run rebuilt from its checkpoint and
// events asks for the next turn only, with the same messages it would have asked for hot.
import { canonicalDigest, canonicalJson, sha256Hex } from '../../hash.js';
import type { Json } from '../../json.js';
import { limits } from '../../limits.js';
import type { AgentMessage, ModelTurnInput, ModelTurnRecord } from '../../protocol/agent.js';
import type { ErrorInfo } from '../../protocol/events.js';
import type { Effect } from '../../protocol/statuses.js';
import type { NodeSpec } from '../../protocol/template.js';
import { requestTexts, type Activation, type Fact, type GatewayRequest } from '../../runtime/activation.js';
import { resolveInputs } from '../../runtime/bindings.js';
import type { Invocation } from '../../state/types.js';
import { normaliseError, withSecretRefs } from '../call.js';
import type { NodeConfig } from '../kind.js';
import { allowedNow, refusal, toolRefusal } from './allow.js';
import { acceptTurn } from './model-output.js';

type Completed = Extract<Fact, { type: 'capability-completed' }>;

const configOf = (spec: NodeSpec): NodeConfig => (spec.config ?? {}) as NodeConfig;
const turnId = (a: Activation, spec: NodeSpec, turn: number) => a.deriveId('iv', a.run.runId, spec.id, a.run.nodes[spec.id].attempt, `turn:${turn}`);
const toolId = (a: Activation, spec: NodeSpec, turn: number, index: number) => a.deriveId('iv', a.run.runId, spec.id, a.run.nodes[spec.id].attempt, `turn:${turn}:tool:${index}`);

export function startLoop(a: Activation, spec: NodeSpec, attempt: number, timeoutAt: number | undefined): void {
  a.emit('node.started', { timeoutAt }, { id: spec.id, attempt });
  const denied = refusal(a, spec, `model:${configOf(spec).model}`);
  if (denied) {
    a.settle.failNode(a, spec.id, denied);
    return;
  }
  requestTurn(a, spec, 1);
}

/**
 * The first message of a loop's conversation (the node's input) and its canonical JSON, by the
 * node's state and attempt: its bindings' sources are settled before the node starts, so it is
 * the same for every turn of an attempt.
 */
const firstMessages = new WeakMap<object, FirstMessage>();

interface FirstMessage {
  attempt: number;
  message: AgentMessage;
  canonical: string;
}

function firstMessage(a: Activation, spec: NodeSpec): FirstMessage {
  const node = a.run.nodes[spec.id];
  let first = firstMessages.get(node);
  if (first === undefined || first.attempt !== node.attempt) {
    const input = resolveInputs(spec.inputs, a.run);
    const message: AgentMessage = { role: 'user', content: typeof input === 'string' ? input : canonicalJson(input) };
    first = { attempt: node.attempt, message, canonical: canonicalJson(message) };
    firstMessages.set(node, first);
  }
  return first;
}

/**
 * The conversation's canonical JSON so far without the brackets, by the loop's list of folded
 * messages (which only grows: the journal appends to it), and how many folded messages it holds.
 * A turn writes only the messages that are new since the last one instead of the whole
 * conversation again (RFC 8785 writes an array as its members' canonical texts joined by commas:
 * the text, and the digest, are the same either way). The same text is the request's
 * `input.messages`: canonical JSON is JSON, and serialising each message a second time in the
 * interpreter only to order its members otherwise was a tenth of a model turn's cost.
 */
const transcripts = new WeakMap<readonly AgentMessage[], { first: FirstMessage; count: number; canonical: string }>();

/** The whole conversation so far, the node's input first, then what the journal folded, and its canonical JSON. */
function conversation(a: Activation, spec: NodeSpec): { messages: AgentMessage[]; canonical: string } {
  const first = firstMessage(a, spec);
  const folded = a.run.nodes[spec.id].agent?.messages ?? [];
  let t = transcripts.get(folded);
  if (t === undefined || t.first !== first) {
    t = { first, count: 0, canonical: first.canonical };
    transcripts.set(folded, t);
  }
  for (; t.count < folded.length; t.count++) t.canonical += `,${canonicalJson(folded[t.count])}`;
  return { messages: [first.message, ...folded], canonical: `[${t.canonical}]` };
}

/** Requests model turn `turn`, unless the node's `maxTurns` is spent. */
function requestTurn(a: Activation, spec: NodeSpec, turn: number, reissued = false): void {
  const config = configOf(spec);
  const maxTurns = config.maxTurns ?? limits.agentTurnsDefault;
  if (turn > maxTurns) {
    a.settle.failNode(a, spec.id, { code: 'agent.max-turns', message: `node ${spec.id} used its ${maxTurns} model turns without a final answer`, retryable: false });
    return;
  }
  const node = a.run.nodes[spec.id];
  const { messages, canonical } = conversation(a, spec);
  if (canonical.length > limits.agentConversationCharsMax) {
    a.settle.failNode(a, spec.id, { code: 'agent.conversation-too-large', message: `node ${spec.id}: the conversation has ${canonical.length} characters after ${turn - 1} turns (at most ${limits.agentConversationCharsMax})`, retryable: false });
    return;
  }
  const tools = allowedNow(a, spec, 'tools');
  const skills = allowedNow(a, spec, 'skills');
  const input: ModelTurnInput = { turn, tools, messages, messagesDigest: `sha256:${sha256Hex(canonical)}` };
  const record: ModelTurnRecord = { turn, tools, messagesDigest: input.messagesDigest, messagesCount: messages.length };
  if (config.instructions !== undefined) {
    input.instructions = config.instructions;
    record.instructionsDigest = canonicalDigest(config.instructions);
  }
  if (skills.length > 0) input.skills = record.skills = skills;
  if (config.outputSchema !== undefined) {
    input.outputSchema = config.outputSchema;
    record.outputSchemaDigest = canonicalDigest(config.outputSchema);
  }
  const invocationId = turnId(a, spec, turn);
  // A model call changes nothing outside: a turn whose outcome is unknown may be asked again. One
  // whose outcome is journaled never is: the next request is for the next turn.
  stage(a, spec, { invocationId, kind: 'model', name: config.model, input: input as unknown as Json, effect: 'read-only', attempt: node.attempt }, record as unknown as Json, reissued, canonical);
}

/**
 * Journals a call of the loop and stages its request. `messagesJson`: a model turn's conversation
 * as JSON text (`conversation`), which the request's text takes as it is instead of serialising
 * the whole conversation again at every turn.
 */
function stage(a: Activation, spec: NodeSpec, call: Pick<GatewayRequest, 'invocationId' | 'kind' | 'name' | 'input' | 'effect' | 'attempt'>, journaled: Json, reissued: boolean, messagesJson?: string): void {
  a.emit(
    'capability.requested',
    { invocationId: call.invocationId, kind: call.kind, name: call.name, effect: call.effect, input: journaled, reissued: reissued || undefined },
    { id: spec.id, attempt: call.attempt, invocationId: call.invocationId },
  );
  const request: GatewayRequest = { ...call, runId: a.run.runId, nodeId: spec.id, authority: { id: a.run.authority.id, scopes: [...a.run.authority.scopes] } };
  const extra = withSecretRefs(configOf(spec));
  if (Object.keys(extra).length > 0) request.config = extra;
  const timeoutAt = a.run.nodes[spec.id].timeoutAt;
  if (timeoutAt !== undefined) request.deadlineAt = timeoutAt;
  if (reissued) request.reissued = true;
  if (messagesJson !== undefined) requestTexts.set(request, withMessages(request, messagesJson));
  a.requests.push(request);
}

/** Stands for a request's `input.messages` in its text until the conversation's JSON replaces it. */
const messagesMark = '\u0000messages\u0000';

/** `messagesMark` as `JSON.stringify` writes it, the member name before it. */
const markedMember = `"messages":${JSON.stringify(messagesMark)}`;

/**
 * The request's JSON text, with the JSON of `input.messages` given: the request is written with
 * the mark in place of the messages (the input is the loop's own object, built for this request),
 * and the mark's text replaced. The members written before `input.messages` (the invocation id,
 * kind, name, turn and tools) are strings and numbers, whose JSON never holds an unescaped quote:
 * the first `"messages":` member in the text is that one.
 */
function withMessages(request: GatewayRequest, messagesJson: string): string {
  const input = request.input as Record<string, Json>;
  const messages = input.messages;
  input.messages = messagesMark;
  const shell = JSON.stringify(request);
  input.messages = messages;
  const at = shell.indexOf(markedMember);
  return `${shell.slice(0, at)}"messages":${messagesJson}${shell.slice(at + markedMember.length)}`;
}

export function completeLoopCall(a: Activation, spec: NodeSpec, inv: Invocation, fact: Completed): void {
  if (inv.kind === 'model') completeTurn(a, spec, fact);
  else settleTool(a, spec, inv.invocationId, fact.ok ? { output: fact.output ?? null } : { error: normaliseError(a, fact.error) });
}

function completeTurn(a: Activation, spec: NodeSpec, fact: Completed): void {
  if (!fact.ok) {
    a.settle.failNode(a, spec.id, normaliseError(a, fact.error));
    return;
  }
  const accepted = acceptTurn(fact.output);
  if (typeof accepted === 'string') {
    a.settle.failNode(a, spec.id, { code: 'agent.model-output-invalid', message: `node ${spec.id}: ${accepted}`, retryable: false });
    return;
  }
  const config = configOf(spec);
  const node = a.run.nodes[spec.id];
  const turn = (node.agent?.turn ?? 0) + 1;
  a.emit('node.agent-turn', { turn, message: accepted.message, usage: accepted.usage, finishReason: accepted.finishReason }, { id: spec.id, attempt: node.attempt });
  const usage = node.agent!.usage;
  if (config.maxTokens !== undefined && usage.inputTokens + usage.outputTokens > config.maxTokens) {
    const used = usage.inputTokens + usage.outputTokens;
    a.settle.failNode(a, spec.id, { code: 'agent.max-tokens', message: `node ${spec.id} used ${used} tokens in ${turn} turns (at most ${config.maxTokens})`, retryable: false, detail: { ...usage, turns: turn } });
    return;
  }
  const calls = accepted.message.toolCalls ?? [];
  if (calls.length === 0) {
    finalAnswer(a, spec, turn, accepted.message.text ?? '');
    return;
  }
  calls.forEach((call, i) => requestTool(a, spec, turn, i, accepted.effects[i]));
  if (a.run.nodes[spec.id].status === 'running' && !hasCallsInFlight(a, spec.id)) requestTurn(a, spec, turn + 1);
}

/** Requests the `index`th tool call of `turn`, or answers the model with its refusal. */
function requestTool(a: Activation, spec: NodeSpec, turn: number, index: number, declared: Effect, reissued = false): void {
  const calls = lastCalls(a, spec);
  const call = calls[index];
  const node = a.run.nodes[spec.id];
  const invocationId = toolId(a, spec, turn, index);
  const refused = toolRefusal(a, spec, call.name);
  if (refused) {
    // The refusal names the call's invocation id: it settles a call an operator asked to retry.
    a.emit('node.agent-tool-result', { turn, toolCallId: call.id, toolName: call.name, error: { code: refused.code, message: refused.message }, refused: true }, { id: spec.id, attempt: node.attempt, invocationId });
    return;
  }
  const effect: Effect = spec.readOnly ? 'read-only' : declared;
  stage(a, spec, { invocationId, kind: 'tool', name: call.name, input: call.input, effect, attempt: node.attempt }, call.input, reissued);
  rememberToolId(calls, index, invocationId);
}

/**
 * The invocation ids of a turn's tool calls, by the turn's list of calls, as they were requested:
 * a call that settles finds its index without deriving every id of the turn again.
 */
const toolIds = new WeakMap<readonly unknown[], string[]>();

function rememberToolId(calls: readonly unknown[], index: number, invocationId: string): void {
  let ids = toolIds.get(calls);
  if (ids === undefined) toolIds.set(calls, (ids = []));
  ids[index] = invocationId;
}

/** The index of the call of `turn` whose invocation this is. */
function toolIndex(a: Activation, spec: NodeSpec, turn: number, calls: readonly unknown[], invocationId: string): number {
  const known = toolIds.get(calls)?.indexOf(invocationId) ?? -1;
  return known >= 0 ? known : calls.findIndex((_, i) => toolId(a, spec, turn, i) === invocationId);
}

/** The tool calls of the latest model turn. */
function lastCalls(a: Activation, spec: NodeSpec) {
  const messages = a.run.nodes[spec.id].agent!.messages;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'assistant') return m.toolCalls ?? [];
  }
  return [];
}

function hasCallsInFlight(a: Activation, nodeId: string): boolean {
  for (const inv of Object.values(a.run.inflight)) if (inv.nodeId === nodeId) return true;
  return false;
}

/**
 * A tool call of the latest turn settled: its result (or error: a tool's failure is the model's
 * to handle, not the node's) goes into the conversation; when it was the turn's last call in
 * flight and nothing needs attention, the next turn is requested.
 */
function settleTool(a: Activation, spec: NodeSpec, invocationId: string, result: { output: Json } | { error: ErrorInfo }): void {
  const node = a.run.nodes[spec.id];
  const turn = node.agent!.turn;
  const calls = lastCalls(a, spec);
  const index = toolIndex(a, spec, turn, calls, invocationId);
  const call = calls[index];
  const payload =
    'output' in result
      ? { turn, toolCallId: call.id, toolName: call.name, output: result.output }
      : { turn, toolCallId: call.id, toolName: call.name, error: { code: result.error.code, message: result.error.message } };
  a.emit('node.agent-tool-result', payload, { id: spec.id, attempt: node.attempt, invocationId });
  if (node.status === 'running' && !hasCallsInFlight(a, spec.id)) requestTurn(a, spec, turn + 1);
}

/** A turn without tool calls: the answer, checked against `outputSchema` when there is one. */
function finalAnswer(a: Activation, spec: NodeSpec, turn: number, text: string): void {
  const schema = configOf(spec).outputSchema;
  if (schema === undefined) {
    a.settle.commitOutput(a, spec.id, text);
    return;
  }
  let value: Json;
  let problem: string | undefined;
  try {
    value = JSON.parse(text) as Json;
    problem = a.settle.outputProblem(value, schema);
  } catch {
    value = null;
    problem = 'the answer is not JSON text';
  }
  if (problem === undefined) {
    a.settle.commitOutput(a, spec.id, value, schema);
    return;
  }
  // The model is told why, and may answer again within its turns.
  a.emit('node.agent-answer-invalid', { turn, problem: problem.slice(0, limits.errorMessageCharsMax) }, { id: spec.id, attempt: a.run.nodes[spec.id].attempt });
  requestTurn(a, spec, turn + 1);
}

/**
 * A call of the loop was in flight when the host restarted and its effect is safe to repeat (a
 * model turn always is): asked again, under the authority of this resume. A model turn the
 * authority no longer grants fails the node; a tool call it no longer grants goes back to the
 * model as refused.
 */
export function reissueLoopCall(a: Activation, spec: NodeSpec, inv: Invocation): void {
  const node = a.run.nodes[spec.id];
  if (inv.kind === 'model') {
    const denied = a.has('authority-v2') ? refusal(a, spec, `model:${inv.name}`) : undefined;
    if (denied) {
      cancel(a, spec, inv, denied.message);
      a.settle.failNode(a, spec.id, denied);
      return;
    }
    requestTurn(a, spec, (node.agent?.turn ?? 0) + 1, true);
    return;
  }
  const turn = node.agent!.turn;
  const index = lastCalls(a, spec).findIndex((_, i) => toolId(a, spec, turn, i) === inv.invocationId);
  const refused = a.has('authority-v2') ? toolRefusal(a, spec, inv.name) : undefined;
  if (refused) {
    cancel(a, spec, inv, refused.message);
    settleTool(a, spec, inv.invocationId, { error: refused });
    return;
  }
  requestTool(a, spec, turn, index, inv.effect, true);
}

function cancel(a: Activation, spec: NodeSpec, inv: Invocation, reason: string): void {
  a.emit('capability.cancelled', { invocationId: inv.invocationId, reason }, { id: spec.id, attempt: inv.attempt, invocationId: inv.invocationId });
  a.cancels.push({ invocationId: inv.invocationId, reason });
}

/**
 * An operator settled a tool call of the loop whose outcome was unknown: `succeeded` (with the
 * output the tool had) and `fail` answer the model with it; `retry` asks the tool again. The loop
 * goes on when no call of the turn is unknown any more.
 */
export function resolveLoopCall(a: Activation, spec: NodeSpec, resolution: string, output: Json, failure: string): boolean {
  const node = a.run.nodes[spec.id];
  const unknown = node.agent?.unknown ?? [];
  if (unknown.length === 0) return false;
  const { invocationId, effect } = unknown[0];
  const turn = node.agent!.turn;
  const calls = lastCalls(a, spec);
  const index = toolIndex(a, spec, turn, calls, invocationId);
  if (resolution === 'retry') {
    resumeIfSettled(a, spec, true);
    requestTool(a, spec, turn, index, effect, true);
    // Refused now (the authority changed): the model hears so in the next turn.
    if (a.run.nodes[spec.id].status === 'running' && !hasCallsInFlight(a, spec.id)) requestTurn(a, spec, turn + 1);
    return true;
  }
  const result = resolution === 'succeeded' ? { output } : { error: { code: 'node.resolved-failed', message: failure, retryable: false } as ErrorInfo };
  const call = calls[index];
  const payload =
    'output' in result
      ? { turn, toolCallId: call.id, toolName: call.name, output: result.output }
      : { turn, toolCallId: call.id, toolName: call.name, error: { code: result.error.code, message: result.error.message } };
  a.emit('node.agent-tool-result', payload, { id: spec.id, attempt: node.attempt, invocationId });
  resumeIfSettled(a, spec, false);
  return true;
}

function resumeIfSettled(a: Activation, spec: NodeSpec, retrying: boolean): void {
  const node = a.run.nodes[spec.id];
  if ((node.agent?.unknown?.length ?? 0) > (retrying ? 1 : 0)) return;
  a.emit('node.resumed', { reason: 'every unknown tool call was resolved' }, { id: spec.id, attempt: node.attempt });
  if (!retrying && !hasCallsInFlight(a, spec.id)) requestTurn(a, spec, node.agent!.turn + 1);
}

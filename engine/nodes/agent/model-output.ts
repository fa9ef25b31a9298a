// A model turn's output as the engine accepts it (engine/protocol/agent.ts `ModelTurnOutput`):
// checked before anything of it is journaled as the conversation, so a host's bad answer fails
// the node with `agent.model-output-invalid` instead of corrupting the next turn's request.
import { jsonProblem, type Json } from '../../json.js';
import { limits } from '../../limits.js';
import type { AgentMessage, ModelTurnOutput, TokenUsage } from '../../protocol/agent.js';
import type { Effect } from '../../protocol/statuses.js';

const finishReasons = new Set(['stop', 'tool-calls', 'length', 'content-filter', 'error', 'other']);
const effects = new Set(['read-only', 'idempotent', 'unknown']);

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0;

export interface AcceptedTurn {
  message: Extract<AgentMessage, { role: 'assistant' }>;
  usage: TokenUsage;
  finishReason: string;
  /** The effect class of each tool call, as the host annotated it (`unknown` when it did not). */
  effects: Effect[];
}

/** The turn, or what is wrong with the output. */
export function acceptTurn(output: Json | undefined): AcceptedTurn | string {
  if (output === null || typeof output !== 'object' || Array.isArray(output)) return 'a model turn answers an object { text?, toolCalls, usage, finishReason }';
  const o = output as Partial<Record<keyof ModelTurnOutput, Json>>;
  if (o.text !== undefined && typeof o.text !== 'string') return '"text" must be a string';
  const usage = o.usage as Record<string, unknown> | undefined;
  if (!usage || !isCount(usage.inputTokens) || !isCount(usage.outputTokens)) return '"usage" must be { inputTokens, outputTokens } with non-negative integers';
  const finishReason = o.finishReason ?? 'other';
  if (typeof finishReason !== 'string' || !finishReasons.has(finishReason)) return `"finishReason" must be one of ${[...finishReasons].join(', ')}`;
  const calls = o.toolCalls ?? [];
  if (!Array.isArray(calls)) return '"toolCalls" must be an array';
  if (calls.length > limits.agentToolCallsPerTurnMax) return `the turn asks for ${calls.length} tool calls (at most ${limits.agentToolCallsPerTurnMax})`;
  const message: AcceptedTurn['message'] = { role: 'assistant' };
  if (typeof o.text === 'string') message.text = o.text;
  const seen = new Set<string>();
  const callEffects: Effect[] = [];
  const toolCalls = [];
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as Record<string, Json> | null;
    if (!call || typeof call !== 'object' || typeof call.id !== 'string' || typeof call.name !== 'string') return `toolCalls[${i}] must be { id, name, input }`;
    if (call.id.length === 0 || call.id.length > limits.agentToolCallIdCharsMax) return `toolCalls[${i}].id must have 1 to ${limits.agentToolCallIdCharsMax} characters`;
    if (seen.has(call.id)) return `toolCalls[${i}].id ${JSON.stringify(call.id)} is used twice in one turn`;
    seen.add(call.id);
    const input = call.input ?? null;
    const problem = jsonProblem(input, limits.nodeOutputDepthMax);
    if (problem) return `toolCalls[${i}].input is not plain JSON: ${problem}`;
    callEffects.push(typeof call.effect === 'string' && effects.has(call.effect) ? (call.effect as Effect) : 'unknown');
    toolCalls.push({ id: call.id, name: call.name, input });
  }
  if (toolCalls.length > 0) message.toolCalls = toolCalls;
  return { message, usage: { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }, finishReason, effects: callEffects };
}

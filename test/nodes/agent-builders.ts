// Builders of the agent-loop tests: an `agent.run@1` with a model, the output of a model turn,
// and the events the loop writes, as plain literals (see test/protocol/builders.ts).
import { authority as defaultAuthority, bind, canonicalDigest, node, refOf, template, type Ev, type NodeLiteral, type Obj } from '../protocol/harness.js';

export const question = { q: 'why?' };
/** The conversation's first message: the node's input as canonical JSON text. */
export const userMessage = { role: 'user', content: '{"question":"why?"}' };

/** `start -> ag -> end`, the agent allowed `search` and `charge`, at most 5 turns. */
export function agentTemplate(config: Obj = {}, extra: Obj = {}, spec: Obj = {}): Obj {
  const ag: NodeLiteral = { id: 'ag', uses: 'agent.run@1', config: { model: 'fake', tools: ['search', 'charge'], instructions: 'Be brief.', maxTurns: 5, ...config }, inputs: { question: bind.input('/q') }, ...extra };
  return template('loop', [node.start(), ag, node.end('end', { answer: bind.output('ag') })], undefined, spec);
}

export type Call = { id: string; name: string; input: unknown; effect?: string };

/** A model turn's output: tool calls (none: a final answer with `text`). */
export function turnOutput(calls: Call[], text?: string, usage = { inputTokens: 10, outputTokens: 5 }): Obj {
  return { ...(text !== undefined ? { text } : {}), toolCalls: calls, usage, finishReason: calls.length > 0 ? 'tool-calls' : 'stop' };
}

/** The assistant message a turn's output folds to (tool calls without their effect). */
export function assistant(calls: Call[], text?: string): Obj {
  return { role: 'assistant', ...(text !== undefined ? { text } : {}), ...(calls.length > 0 ? { toolCalls: calls.map(({ id, name, input }) => ({ id, name, input })) } : {}) };
}

export const toolMessage = (call: Call, result: { output: unknown } | { error: Obj }): Obj => ({ role: 'tool', toolCallId: call.id, toolName: call.name, ...result });

/** The journaled request of a model turn, and the request the host receives. */
export function turnRequest(inv: string, turn: number, messages: Obj[], options: { tools?: string[]; reissued?: boolean; instructions?: string; authority?: Obj } = {}): { event: Ev; request: Obj } {
  const tools = options.tools ?? ['search', 'charge'];
  const instructions = options.instructions ?? 'Be brief.';
  const digest = canonicalDigest(messages);
  const reissued = options.reissued ? { reissued: true } : {};
  return {
    event: { type: 'capability.requested', ...refOf(inv), payload: { invocationId: inv, kind: 'model', name: 'fake', effect: 'read-only', input: { turn, tools, messagesDigest: digest, messagesCount: messages.length, instructionsDigest: canonicalDigest(instructions) }, ...reissued } },
    request: { inv, node: 'ag', attempt: refOf(inv).attempt, kind: 'model', name: 'fake', input: { turn, tools, messages, messagesDigest: digest, instructions }, effect: 'read-only', ...reissued, authority: options.authority ?? defaultAuthority },
  };
}

export const agentEv = {
  turn: (turn: number, calls: Call[], text?: string, usage = { inputTokens: 10, outputTokens: 5 }, attempt = 1): Ev => ({
    type: 'node.agent-turn',
    node: 'ag',
    attempt,
    payload: { turn, message: assistant(calls, text), usage, finishReason: calls.length > 0 ? 'tool-calls' : 'stop' },
  }),
  toolRequested: (inv: string, call: Call, effect = 'unknown', reissued = false): Ev => ({
    type: 'capability.requested',
    ...refOf(inv),
    payload: { invocationId: inv, kind: 'tool', name: call.name, effect, input: call.input, ...(reissued ? { reissued: true } : {}) },
  }),
  result: (turn: number, call: Call, output: unknown, inv?: string): Ev => ({ type: 'node.agent-tool-result', node: 'ag', attempt: 1, ...(inv ? { inv } : {}), payload: { turn, toolCallId: call.id, toolName: call.name, output } }),
  refused: (turn: number, call: Call, message: string, inv?: string): Ev => ({
    type: 'node.agent-tool-result',
    node: 'ag',
    attempt: 1,
    ...(inv ? { inv } : {}),
    payload: { turn, toolCallId: call.id, toolName: call.name, error: { code: 'agent.tool-refused', message }, refused: true },
  }),
};

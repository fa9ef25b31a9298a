// The turns of an agent loop (`agent.run@1` with a `model`), read from the node's own agent
// events (docs/agents.md): what each model turn answered and used, the tool calls it asked for
// with their results, refusals and errors, and the answers its `outputSchema` sent back.
import type { EventEnvelope } from '../../core/types.js';
import { h, jsonBlock } from './node-panel.js';

export interface ToolCallView {
  id: string;
  name: string;
  input: unknown;
  output?: unknown;
  error?: { code: string; message: string };
  refused?: boolean;
}

export interface TurnView {
  /** The node attempt (each attempt starts its conversation again) and the turn in it. */
  attempt: number;
  turn: number;
  seq: number;
  text?: string;
  toolCalls: ToolCallView[];
  usage: { inputTokens: number; outputTokens: number };
  finishReason: string;
  /** Why the answer of this turn was sent back (it did not match `outputSchema`). */
  invalid?: string;
}

export interface AgentView {
  turns: TurnView[];
  usage: { inputTokens: number; outputTokens: number; turns: number };
}

/** Folds one agent event of a node into its view; other events leave it as it is. */
export function addAgentEvent(view: AgentView | undefined, e: EventEnvelope): AgentView | undefined {
  const p = (e.payload ?? {}) as Record<string, any>;
  if (e.type === 'node.agent-turn') {
    const agent = view ?? { turns: [], usage: { inputTokens: 0, outputTokens: 0, turns: 0 } };
    const message = (p.message ?? {}) as { text?: string; toolCalls?: { id: string; name: string; input: unknown }[] };
    agent.turns.push({
      attempt: e.node?.attempt ?? 1,
      turn: p.turn,
      seq: e.seq,
      ...(message.text !== undefined ? { text: message.text } : {}),
      toolCalls: (message.toolCalls ?? []).map((c) => ({ id: c.id, name: c.name, input: c.input })),
      usage: p.usage,
      finishReason: p.finishReason,
    });
    agent.usage = { inputTokens: agent.usage.inputTokens + p.usage.inputTokens, outputTokens: agent.usage.outputTokens + p.usage.outputTokens, turns: agent.usage.turns + 1 };
    return agent;
  }
  const last = view?.turns[view.turns.length - 1];
  if (!last) return view;
  if (e.type === 'node.agent-tool-result') {
    const call = last.toolCalls.find((c) => c.id === p.toolCallId);
    if (call) {
      if (p.error !== undefined) call.error = p.error;
      else call.output = p.output;
      if (p.refused) call.refused = true;
    }
  } else if (e.type === 'node.agent-answer-invalid') last.invalid = p.problem;
  return view;
}

/** The "Turns" section of a node's panel. */
export function renderTurns(agent: AgentView, onPickSeq: (seq: number) => void): HTMLElement[] {
  const u = agent.usage;
  const out: HTMLElement[] = [h('h4', { id: 'agent-usage' }, `Turns (${u.turns}) · ${u.inputTokens.toLocaleString('en')} tokens in · ${u.outputTokens.toLocaleString('en')} out`)];
  for (const t of agent.turns) {
    const calls = t.toolCalls.length;
    const title = `${t.attempt > 1 ? `attempt ${t.attempt} · ` : ''}turn ${t.turn} · ${calls === 0 ? 'answer' : `${calls} tool call${calls === 1 ? '' : 's'}`} · ${t.usage.inputTokens} in / ${t.usage.outputTokens} out · ${t.finishReason}`;
    const seq = h('button', { type: 'button', class: 'link' }, `#${t.seq}`);
    seq.onclick = () => onPickSeq(t.seq);
    const details = h('details', { class: 'turn', 'data-turn': String(t.turn) }, h('summary', {}, title), h('p', { class: 'seqs' }, 'event ', seq));
    if (t.text !== undefined) details.append(h('h5', {}, 'Text'), h('pre', { class: 'json' }, t.text));
    for (const c of t.toolCalls) {
      const state = c.refused ? 'refused' : c.error ? 'error' : c.output !== undefined ? 'ok' : 'no result';
      details.append(h('h5', { class: c.refused || c.error ? 'hl-failure' : '' }, `${c.name} (${c.id}) · ${state}`), jsonBlock(c.input));
      if (c.output !== undefined) details.append(jsonBlock(c.output));
      if (c.error !== undefined) details.append(jsonBlock(c.error, 'json error'));
    }
    if (t.invalid !== undefined) details.append(h('h5', {}, 'Sent back'), h('p', { class: 'hl-failure' }, t.invalid));
    out.push(details);
  }
  return out;
}

// The component writes an agent's model request with the conversation's canonical JSON as the loop
// keeps it (extended by each turn's new messages), spliced into the request's text. What the
// gateway receives must be JSON text that `JSON.stringify` writes again unchanged, holding the
// request: the whole conversation, in order, whatever the messages hold (quotes, a `"messages":`
// member of their own, control characters, characters outside the BMP), and its digest.
import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { describe, expect, it } from 'vitest';
import type { ComponentLoader } from '../../dist/hosts/core/engine-instance.js';
import { nodeComponentLoader } from '../../dist/hosts/node/sdk/component.js';
import { scriptlessEngine } from '../helpers/node-host.js';

/** The Node loader, keeping the text of every gateway request the component makes. */
function capturing(texts: string[]): ComponentLoader {
  const base = nodeComponentLoader();
  return {
    getCoreModule: (p) => base.getCoreModule(p),
    instantiate: (getCoreModule, imports) => {
      const gateway = (imports as Record<string, Record<string, (...args: unknown[]) => unknown>>)['gm-hz:workflow/gateway'];
      const request = gateway.request;
      // The generic path: the bindings hand the text itself to this function.
      gateway.request = (text: unknown) => {
        texts.push(text as string);
        return request(text);
      };
      return base.instantiate(getCoreModule, imports);
    },
  };
}

const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as (value: unknown) => string | undefined;

const tricky = ['"messages":"\u0000messages\u0000"', 'quote " backslash \\ newline \n nul \u0000', 'emoji 🧭 and 中文', '{"messages":[1,2]}'];

describe("an agent's model request", () => {
  it('is JSON.stringify of the request at every turn, with the whole conversation and its digest', async () => {
    const texts: string[] = [];
    const engine = await scriptlessEngine({ loader: capturing(texts) });
    const turns = 6;
    const template = {
      apiVersion: 'workflow.gm-hz.dev/v1alpha1',
      kind: 'WorkflowTemplate',
      metadata: { id: 'request-text' },
      spec: {
        nodes: [
          { id: 'start', uses: 'core.start@1' },
          { id: 'agent', uses: 'agent.run@1', config: { model: 'm', tools: ['lookup'], maxTurns: turns, instructions: 'Be "brief".' }, inputs: { q: { source: 'input', path: '' } } },
          { id: 'end', uses: 'core.end@1', inputs: { a: { source: 'output', nodeId: 'agent' } } },
        ],
        edges: [
          { from: 'start', to: 'agent' },
          { from: 'agent', to: 'end' },
        ],
        requires: ['model:m', 'tool:lookup'],
      },
    };
    const plan = engine.compile({ root: { template } });
    const runId = 'run-request-text';
    // The conversation as the model must see it, built here from what was answered.
    const expected: unknown[] = [{ role: 'user', content: canonicalize({ q: tricky[0] }) }];
    let out = engine.activate({ runId, now: 1_800_000_000_000, facts: [{ type: 'run-requested', input: tricky[0], authority: { id: 'a', scopes: ['*'] } }], plan });
    let seen = 0;
    for (let step = 0; out.requests.length > 0; step++) {
      const [r] = out.requests;
      const text = texts[texts.length - 1];
      expect(JSON.stringify(JSON.parse(text))).toBe(text);
      expect(JSON.parse(text)).toEqual(r);
      let output: unknown;
      if (r.kind === 'model') {
        const input = r.input as { turn: number; messages: unknown[]; messagesDigest: string; instructions: string };
        expect(input.messages).toEqual(expected);
        expect(input.messagesDigest).toBe(`sha256:${createHash('sha256').update(canonicalize(expected)!).digest('hex')}`);
        expect(input.instructions).toBe('Be "brief".');
        seen += 1;
        const call = { id: `c${input.turn}`, name: 'lookup', input: { q: tricky[input.turn % tricky.length] } };
        output = input.turn < turns ? { text: tricky[(input.turn + 1) % tricky.length], toolCalls: [call], usage: { inputTokens: 1, outputTokens: 1 }, finishReason: 'tool-calls' } : { text: 'done', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 }, finishReason: 'stop' };
        if (input.turn < turns) expected.push({ role: 'assistant', text: tricky[(input.turn + 1) % tricky.length], toolCalls: [call] });
      } else {
        const call = r.input as { q: string };
        output = { echoed: call.q, nested: { messages: tricky } };
        const turn = expected.filter((m) => (m as { role: string }).role === 'assistant').length;
        expected.push({ role: 'tool', toolCallId: `c${turn}`, toolName: 'lookup', output });
      }
      out = engine.activate({ runId, now: 1_800_000_000_001 + step, facts: [{ type: 'capability-completed', invocationId: r.invocationId, ok: true, output }] });
    }
    expect(seen).toBe(turns);
    expect(out.summary.status).toBe('completed');
  });
});

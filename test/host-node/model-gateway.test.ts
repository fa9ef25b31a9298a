// The gateway registry carrying out a model turn: the turn's tool names become the tools'
// specs, its skills their texts through the host's resolver, and each tool call the model asks
// for gets the effect class of the tool's definition; what it cannot do has a typed error.
import { describe, expect, it } from 'vitest';
import { registryGateway } from '../../hosts/core/gateway-registry.js';

const context = () => ({ signal: new AbortController().signal, invocationId: 'iv-1', reissued: false });
const turn = (extra: Record<string, unknown> = {}) => ({
  invocationId: 'iv-1',
  runId: 'run-1',
  nodeId: 'agent',
  attempt: 1,
  kind: 'model' as const,
  name: 'm',
  effect: 'read-only' as const,
  input: { turn: 1, tools: ['look', 'pay', 'gone'], messages: [{ role: 'user', content: 'hi' }], messagesDigest: 'sha256:x', ...extra },
});

describe('a model turn through the gateway registry', () => {
  it('hands the model tool specs and skill texts, and annotates each tool call with its effect', async () => {
    const seen: unknown[] = [];
    const gateway = registryGateway({
      tools: { look: { readOnly: true, description: 'Looks', inputSchema: { type: 'object' }, execute: () => 1 }, pay: { idempotent: true, execute: () => 2 } },
      skills: (name) => (name === 'tone' ? { text: 'Be kind.' } : undefined),
      models: {
        m: {
          generate(request) {
            seen.push({ tools: request.tools, skillTexts: request.skillTexts, messages: request.messages });
            return { toolCalls: ['look', 'pay', 'gone'].map((name, i) => ({ id: `c${i}`, name, input: {} })), usage: { inputTokens: 1, outputTokens: 2 }, finishReason: 'tool-calls' };
          },
        },
      },
    });
    const outcome = await gateway.execute(turn({ skills: ['tone'] }), context());
    expect(seen).toEqual([{ tools: [{ name: 'look', description: 'Looks', inputSchema: { type: 'object' } }, { name: 'pay' }, { name: 'gone' }], skillTexts: [{ name: 'tone', text: 'Be kind.' }], messages: [{ role: 'user', content: 'hi' }] }]);
    expect(outcome).toEqual({
      ok: true,
      output: {
        toolCalls: [
          { id: 'c0', name: 'look', input: {}, effect: 'read-only' },
          { id: 'c1', name: 'pay', input: {}, effect: 'idempotent' },
          { id: 'c2', name: 'gone', input: {}, effect: 'unknown' },
        ],
        usage: { inputTokens: 1, outputTokens: 2 },
        finishReason: 'tool-calls',
      },
    });
    expect(gateway.effects?.()).toEqual({ 'tool:look': 'read-only', 'tool:pay': 'idempotent', 'model:m': 'read-only' });
  });

  it('answers model.not-registered, skill.unresolved, and the model\'s own error', async () => {
    const generate = () => {
      throw Object.assign(new Error('rate limited'), { code: 'model.rate-limited', retryable: true });
    };
    const gateway = registryGateway({ models: { m: { generate } } });
    expect(await gateway.execute({ ...turn(), name: 'other' }, context())).toEqual({ ok: false, error: { code: 'model.not-registered', message: 'no model named "other" is registered in this host', retryable: false } });
    expect(await gateway.execute(turn({ skills: ['tone'] }), context())).toEqual({ ok: false, error: { code: 'skill.unresolved', message: 'the agent uses skills (tone) but this host has no skill resolver', retryable: false } });
    expect(await registryGateway({ models: { m: { generate } }, skills: () => undefined }).execute(turn({ skills: ['tone'] }), context())).toEqual({
      ok: false,
      error: { code: 'skill.unresolved', message: 'no skill named "tone" is known to this host', retryable: false },
    });
    expect(await gateway.execute(turn(), context())).toEqual({ ok: false, error: { code: 'model.rate-limited', message: 'rate limited', retryable: true } });
  });
});

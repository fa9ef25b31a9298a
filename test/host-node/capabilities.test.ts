// What a run may use under an authority: the host's registered tools, agents and models whose
// capability one of the authority's scopes covers, through the SDK and the read-only HTTP API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpApi, type HttpApi } from '../../dist/hosts/node/observe/http-api.js';
import type { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { openRuntime } from '../helpers/node-host.js';

let rt: WorkflowRuntime;
let api: HttpApi;

beforeAll(async () => {
  rt = await openRuntime({
    tools: {
      lookup: { readOnly: true, description: 'Reads a balance', inputSchema: { type: 'object' }, execute: () => 1 },
      pay: () => null,
      refund: { idempotent: true, execute: () => null },
    },
    agents: { writer: () => 'text' },
    models: { stepper: { generate: async () => ({ text: 'x', usage: { inputTokens: 1, outputTokens: 1 }, finishReason: 'stop' }) } as any },
  });
  api = await startHttpApi(rt, { port: 0, insecureNoAuth: true });
});

afterAll(async () => {
  await api?.close();
  await rt?.close();
});

describe('runtime.capabilities(authority)', () => {
  it('lists everything under *, sorted, with effect classes and what a model is told', () => {
    expect(rt.capabilities({ id: 'ops', scopes: ['*'] })).toEqual([
      { kind: 'agent', name: 'writer', capability: 'agent:writer', effect: 'unknown' },
      { kind: 'model', name: 'stepper', capability: 'model:stepper', effect: 'read-only' },
      { kind: 'tool', name: 'lookup', capability: 'tool:lookup', effect: 'read-only', description: 'Reads a balance', inputSchema: { type: 'object' } },
      { kind: 'tool', name: 'pay', capability: 'tool:pay', effect: 'unknown' },
      { kind: 'tool', name: 'refund', capability: 'tool:refund', effect: 'idempotent' },
    ]);
  });

  it('intersects with the scopes: a kind wildcard, a single name, and nothing', () => {
    expect(rt.capabilities({ id: 'team-a', scopes: ['tool:pay', 'model:*', 'approval'] })).toEqual([
      { kind: 'model', name: 'stepper', capability: 'model:stepper', effect: 'read-only' },
      { kind: 'tool', name: 'pay', capability: 'tool:pay', effect: 'unknown' },
    ]);
    expect(rt.capabilities({ id: 'none', scopes: [] })).toEqual([]);
    // A scope naming an unregistered tool lists nothing: the answer is what this host can serve.
    expect(rt.capabilities({ id: 'b', scopes: ['tool:missing'] })).toEqual([]);
  });

  it('answers GET /v1/capabilities?scopes=… with the same list', async () => {
    const res = await fetch(`${api.url}/v1/capabilities?authority=team-a&scopes=tool:*`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      authority: { id: 'team-a', scopes: ['tool:*'] },
      capabilities: [
        { kind: 'tool', name: 'lookup', capability: 'tool:lookup', effect: 'read-only', description: 'Reads a balance', inputSchema: { type: 'object' } },
        { kind: 'tool', name: 'pay', capability: 'tool:pay', effect: 'unknown' },
        { kind: 'tool', name: 'refund', capability: 'tool:refund', effect: 'idempotent' },
      ],
    });
    const post = await fetch(`${api.url}/v1/capabilities`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(await post.json()).toEqual({ error: { code: 'http.method-not-allowed', message: 'POST is not allowed: the API is read-only' } });
  });
});

// The real OpenAI provider of the AI SDK against an OpenAI-compatible server on loopback: the HTTP
// client path, SSE streaming, and the request bodies a provider really receives.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAI } from '@ai-sdk/openai';
import { aiSdkModel } from '../../hosts/node/agents/ai-sdk-model.js';
import type { ToolContext } from '../../hosts/core/gateway-registry.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((done) => (server ? server.close(() => done()) : done())));

function chunk(delta: object, finish: string | null, usage?: object) {
  return `data: ${JSON.stringify({ id: 'cc1', object: 'chat.completion.chunk', created: 0, model: 'fake-1', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
}

async function serve(replies: string[][]) {
  const bodies: any[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (part) => (body += part));
    req.on('end', () => {
      bodies.push({ path: req.url, body: JSON.parse(body) });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const event of replies[bodies.length - 1]!) res.write(event);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((done) => server!.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1`, bodies };
}

describe('aiSdkModel with @ai-sdk/openai on a loopback server', () => {
  it('sends tools and the mapped conversation, returns the tool call, then streams the answer through progress', async () => {
    const { url, bodies } = await serve([
      [chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'notes_lookup', arguments: '{"word":"dag"}' } }] }, null), chunk({}, 'tool_calls', { prompt_tokens: 12, completion_tokens: 3 })],
      [chunk({ role: 'assistant', content: 'Directed ' }, null), chunk({ content: 'acyclic.' }, null), chunk({}, 'stop', { prompt_tokens: 30, completion_tokens: 2 })],
    ]);
    const openai = createOpenAI({ baseURL: url, apiKey: 'loopback' });
    const model = aiSdkModel(openai.chat('fake-1'));
    const progress: unknown[] = [];
    const context = { runId: 'r', nodeId: 'n', attempt: 1, progress: (data: unknown) => progress.push(data) } as unknown as ToolContext;
    const schema = { type: 'object', properties: { word: { type: 'string' } }, required: ['word'], additionalProperties: false };
    const tools = [{ name: 'notes.lookup', description: 'Looks a word up', inputSchema: schema }];
    const user = { role: 'user' as const, content: 'What is a DAG?' };
    expect(await model.generate({ turn: 1, instructions: 'Be brief.', tools, messages: [user], messagesDigest: 'd1' }, context)).toEqual({
      toolCalls: [{ id: 'call_1', name: 'notes.lookup', input: { word: 'dag' } }],
      usage: { inputTokens: 12, outputTokens: 3 },
      finishReason: 'tool-calls',
    });
    const messages = [user, { role: 'assistant' as const, toolCalls: [{ id: 'call_1', name: 'notes.lookup', input: { word: 'dag' } }] }, { role: 'tool' as const, toolCallId: 'call_1', toolName: 'notes.lookup', output: { meaning: 'directed acyclic graph' } }];
    expect(await model.generate({ turn: 2, instructions: 'Be brief.', tools, messages, messagesDigest: 'd2' }, context)).toEqual({ text: 'Directed acyclic.', toolCalls: [], usage: { inputTokens: 30, outputTokens: 2 }, finishReason: 'stop' });
    expect(progress).toEqual([{ type: 'text-delta', text: 'Directed ' }, { type: 'text-delta', text: 'acyclic.' }]);
    expect(bodies.map((b) => b.path)).toEqual(['/v1/chat/completions', '/v1/chat/completions']);
    expect(bodies[0].body).toMatchObject({ model: 'fake-1', stream: true, tools: [{ type: 'function', function: { name: 'notes_lookup', description: 'Looks a word up', parameters: schema } }], messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is a DAG?' }] });
    expect(bodies[1].body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is a DAG?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'notes_lookup', arguments: '{"word":"dag"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"meaning":"directed acyclic graph"}' },
    ]);
  });
});

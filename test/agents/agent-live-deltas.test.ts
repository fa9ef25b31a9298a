// Token deltas of an agent loop's model turn reach a watcher of the run live — over real HTTP, the
// Server-Sent Events of the console's API — and never the journal. The model is @ai-sdk/openai
// against an OpenAI-compatible server on loopback that holds the answer until the watcher is in.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createOpenAI } from '@ai-sdk/openai';
import { aiSdkModel } from '../../dist/hosts/node/agents/ai-sdk-model.js';
import { startCanvas } from '../../dist/hosts/node/canvas.js';
import { chain, openRuntime } from '../helpers/node-host.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function chunk(delta: object, finish: string | null, usage?: object) {
  return `data: ${JSON.stringify({ id: 'cc1', object: 'chat.completion.chunk', created: 0, model: 'fake-1', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
}

/** A chat-completions server: turn 1 asks for a tool, turn 2 streams its answer once `release()` is called. */
async function modelServer() {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let requests = 0;
  let secondAsked!: () => void;
  const asked = new Promise<void>((r) => (secondAsked = r));
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      const n = ++requests;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (n === 1) {
        res.write(chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"word":"dag"}' } }] }, null));
        res.write(chunk({}, 'tool_calls', { prompt_tokens: 10, completion_tokens: 3 }));
      } else {
        secondAsked();
        await released;
        for (const piece of ['Directed ', 'acyclic ', 'graph.']) res.write(chunk({ role: 'assistant', content: piece }, null));
        res.write(chunk({}, 'stop', { prompt_tokens: 20, completion_tokens: 3 }));
      }
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  closers.push(() => new Promise<void>((done) => server.close(() => done())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, release, asked };
}

/** Reads a run's SSE stream to its end: each message's event name, id and data. */
async function readStream(url: string, onMessage: (m: { event: string; id?: string; data: any }) => void): Promise<void> {
  const res = await fetch(url, { headers: { accept: 'text/event-stream' } });
  expect(res.status).toBe(200);
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(part, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = Object.fromEntries(block.split('\n').filter((l) => !l.startsWith(':') && l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]));
      if (fields.data !== undefined) onMessage({ event: fields.event ?? 'message', id: fields.id, data: JSON.parse(fields.data) });
    }
  }
}

describe('live token deltas of an agent turn', () => {
  it('reach the SSE stream of the run as progress, in order, and none of them the journal', async () => {
    const model = await modelServer();
    const openai = createOpenAI({ baseURL: model.url, apiKey: 'loopback' });
    const rt = await openRuntime({ models: { gpt: aiSdkModel(openai.chat('fake-1')) }, tools: { lookup: { readOnly: true, execute: () => ({ meaning: 'directed acyclic graph' }) } } });
    closers.push(() => rt.close());
    const api = await startCanvas(rt, { insecureNoAuth: true });
    closers.push(() => api.close());

    const template = chain('agent-live', [{ id: 'agent', uses: 'agent.run@1', config: { model: 'gpt', instructions: 'Define it.', tools: ['lookup'], maxTurns: 3 } }], { requires: ['model:gpt', 'tool:lookup'] });
    template.spec.nodes[2].inputs = { answer: { source: 'output', nodeId: 'agent' } };
    const handle = await rt.launch({ type: 'inline', template }, { input: 'What is a DAG?' });

    const messages: { event: string; id?: string; data: any }[] = [];
    const reading = readStream(`${api.url}/v1/runs/${handle.runId}/events`, (m) => {
      messages.push(m);
    });
    // The answer streams only once the watcher has the run's first event and the model was asked.
    await model.asked;
    while (messages.length === 0) await new Promise((r) => setTimeout(r, 10));
    model.release();
    await reading;
    expect(await handle.settled()).toMatchObject({ status: 'completed', output: { answer: 'Directed acyclic graph.' } });

    const progress = messages.filter((m) => m.event === 'progress');
    expect(progress.map((m) => m.data.data)).toEqual([
      { type: 'text-delta', text: 'Directed ' },
      { type: 'text-delta', text: 'acyclic ' },
      { type: 'text-delta', text: 'graph.' },
    ]);
    expect(progress.every((m) => m.id === undefined && m.data.nodeId === 'agent')).toBe(true);
    const liveSeqs = progress.map((m) => m.data.liveSeq);
    expect(liveSeqs).toEqual([...liveSeqs].sort((a, b) => a - b));
    // The stream's committed events are the journal's, and the journal holds no delta.
    const journal = (await rt.readEvents(handle.runId, { limit: 1000 })).events;
    expect(messages.filter((m) => m.event !== 'progress').map((m) => Number(m.id))).toEqual(journal.map((e) => e.seq));
    expect(JSON.stringify(journal)).not.toContain('text-delta');
    expect(JSON.stringify(journal)).not.toContain('"acyclic "');
  });
});

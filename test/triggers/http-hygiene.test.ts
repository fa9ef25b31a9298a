// What anyone on the network can make the trigger routes do before authenticating: nothing that
// grows the store with the number of requests, no configuration detail in an answer, no socket
// held by a slow client, no route that hangs. Real HTTP on loopback against the HTTP API of a
// runtime on a SQLite file; the oracle is the ingress journal and the sockets themselves.
import { connect } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpApi, WorkflowRuntime, type HttpApi } from '../../dist/hosts/node/index.js';
import { tempDir } from '../helpers/node-host.js';

let rt: WorkflowRuntime;
let http: HttpApi;

beforeAll(async () => {
  rt = await WorkflowRuntime.open({ dir: tempDir('adw-hygiene-'), log: () => undefined });
  http = await startHttpApi(rt as never, { port: 0, insecureNoAuth: true, headersTimeoutMs: 1000, requestTimeoutMs: 1000 });
});
afterAll(async () => {
  await http?.close();
  await rt?.close();
});

async function rejected(): Promise<{ bindingId: string; reasonCode: string; reason: string }[]> {
  return (await rt.triggerStorage.listIngress({ status: 'rejected', limit: 10_000 } as never)) as never;
}

describe('trigger routes before authentication', () => {
  it('300 unsigned requests to unknown bindings and 300 GETs leave a bounded number of records, each counting what it stood for', async () => {
    const before = (await rejected()).length;
    for (let i = 0; i < 300; i++) {
      const res = await request(`${http.url}/v1/hooks/nope-${i % 7}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(res.statusCode).toBe(404);
      await res.body.dump();
    }
    for (let i = 0; i < 300; i++) {
      const res = await request(`${http.url}/v1/hooks/hook`, { method: 'GET' });
      expect(res.statusCode).toBe(405);
      await res.body.dump();
    }
    const records = (await rejected()).slice(0, (await rejected()).length - before);
    // One record per (source, unknown binding, code) and window, whatever the number of requests.
    expect(records.map((r) => r.reasonCode).sort()).toEqual(['binding.not-found', 'http.method-not-allowed']);
  });

  it('answers HEAD on a run event stream without holding the connection', async () => {
    const handle = await rt.launch(
      { apiVersion: 'workflow.gm-hz.dev/v1alpha1', kind: 'WorkflowTemplate', metadata: { id: 'nothing' }, spec: { nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'end', uses: 'core.end@1' }], edges: [{ from: 'start', to: 'end' }] } } as never,
      { input: {} },
    );
    await handle.result;
    const res = await request(`${http.url}/v1/runs/${handle.runId}/events`, { method: 'HEAD', headers: { accept: 'text/event-stream' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(await res.body.text()).toBe('');
  });

  it('closes the connection of a client that trickles its body past the request bound', async () => {
    const { port } = new URL(http.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('POST /v1/hooks/hook HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{');
    let answer = '';
    socket.on('data', (d) => (answer += d));
    const trickle = setInterval(() => socket.writable && socket.write(' '), 200);
    const closed = await new Promise<boolean>((resolve) => {
      socket.once('close', () => resolve(true));
      // The server's bound is 1 s (checked every second); far past it, the socket must be gone.
      setTimeout(() => resolve(false), 15_000);
    });
    clearInterval(trickle);
    socket.destroy();
    expect(closed).toBe(true);
    expect(answer === '' || answer.startsWith('HTTP/1.1 408')).toBe(true);
  });
});

// The HTTP API of `agent-workflow serve --http` in its own process, over real HTTP on loopback:
// an event stream cut in the middle of a run and resumed with Last-Event-ID loses nothing and
// repeats nothing; every request without the token is refused.
import { writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { describe, expect, it } from 'vitest';
import { jsonLines, liveWorld, runCli, startCli, template, until, writeTemplate } from './helpers.js';

const token = 'live-test-token';
const auth = { authorization: `Bearer ${token}` };

const echoes = (id: string, path: string) => ({ id, uses: 'core.foreach@1', config: { maxConcurrency: 4, body: { uses: 'tool.call@1', config: { tool: 'echo' } } }, inputs: { items: { source: 'input', path } } });
const sweep = template(
  'sweep-gate-sweep',
  [echoes('before', '/before'), { id: 'gate', uses: 'tool.call@1', config: { tool: 'gate' } }, echoes('after', '/after')],
  [
    ['start', 'before'],
    ['before', 'gate'],
    ['gate', 'after'],
    ['after', 'end'],
  ],
  { requires: ['tool:echo', 'tool:gate'] },
);

interface SseMessage {
  id?: string;
  event?: string;
  data?: string;
}

/** Reads an event stream until it ends or `stopWhen` says so (then the connection is cut). */
async function readStream(url: string, headers: Record<string, string>, stopWhen: (m: SseMessage) => boolean = () => false): Promise<{ status: number; messages: SseMessage[]; ended: boolean }> {
  const cut = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: cut.signal });
  const messages: SseMessage[] = [];
  if (res.status !== 200 || !res.body) return { status: res.status, messages, ended: true };
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done) return { status: res.status, messages, ended: true };
    text += decoder.decode(chunk.value, { stream: true });
    let at: number;
    while ((at = text.indexOf('\n\n')) >= 0) {
      const block = text.slice(0, at);
      text = text.slice(at + 2);
      const m: SseMessage = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = line.slice(0, colon);
        const value = line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id' || field === 'event' || field === 'data') m[field] = value;
      }
      if (m.data === undefined) continue;
      messages.push(m);
      if (stopWhen(m)) {
        cut.abort();
        await reader.cancel().catch(() => undefined);
        return { status: res.status, messages, ended: false };
      }
    }
  }
}

describe('serve --http', () => {
  it('streams a run as SSE, resumes after Last-Event-ID mid-run without loss or repeat, and answers the JSON API', async () => {
    const w = liveWorld({ AGENT_WORKFLOW_HTTP_TOKEN: token });
    const server = startCli(w, ['serve', '--http', '0']);
    try {
      const serving = await until('the server to listen', () => jsonLines(server.out()).find((l) => l.kind === 'Serving'));
      const base = serving.http as string;
      expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const input = { before: Array.from({ length: 150 }, (_, i) => i), after: Array.from({ length: 150 }, (_, i) => i) };
      const queued = await runCli(w, ['run', writeTemplate(w, 'sweep', sweep), '--no-wait', '--input', JSON.stringify(input)]);
      expect(queued.code).toBe(0);
      const runId = jsonLines(queued.stdout).at(-1).runId as string;
      const stream = `${base}/v1/runs/${runId}/events`;

      // First connection: cut once the gate holds the run in the middle.
      const first = await readStream(stream, auth, (m) => m.event === 'capability.requested' && JSON.parse(m.data!).payload.name === 'gate');
      expect(first.ended).toBe(false);
      const lastId = first.messages.at(-1)!.id!;
      const running = await (await fetch(`${base}/v1/runs/${runId}`, { headers: auth })).json();
      expect(running.status).toBe('running');

      // Second connection resumes after the last id it saw; the gate opens meanwhile.
      const second = readStream(stream, { ...auth, 'last-event-id': lastId });
      writeFileSync(w.env.GATE_FILE, '');
      const rest = await second;
      expect(rest.ended).toBe(true);

      const seen = [...first.messages, ...rest.messages];
      const seqs = seen.map((m) => Number(m.id));
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
      for (const m of seen) expect(JSON.parse(m.data!)).toMatchObject({ seq: Number(m.id), type: m.event });
      expect(seen.filter((m) => m.event === 'capability.completed')).toHaveLength(input.before.length + 1 + input.after.length);
      expect(seen.filter((m) => m.event === 'run.completed')).toHaveLength(1);

      // The JSON API agrees with the stream.
      const run = await (await fetch(`${base}/v1/runs/${runId}`, { headers: auth })).json();
      expect(run).toMatchObject({ runId, status: 'completed' });
      const pages: any[] = [];
      for (let after = 0; ; ) {
        const page = await (await fetch(`${base}/v1/runs/${runId}/events?afterSeq=${after}&limit=200`, { headers: auth })).json();
        pages.push(...page.events);
        after = page.lastSeq;
        if (!page.more) break;
      }
      expect(pages.map((e) => e.seq)).toEqual(seqs);
      const exported = await (await fetch(`${base}/v1/runs/${runId}/export`, { headers: auth })).json();
      expect(exported.run).toMatchObject({ runId, status: 'completed' });
      expect(exported.events.map((e: any) => e.seq)).toEqual(seqs);

      // The replay page is served beside the API (no token: static files only), and nothing else is.
      expect(serving.page).toBe(`${base}/page/`);
      const pageRes = await fetch(serving.page);
      expect(pageRes.status).toBe(200);
      expect(pageRes.headers.get('content-type')).toContain('text/html');
      expect(await pageRes.text()).toContain('id="dag-container"');
      const escape = await new Promise<{ status?: number; body: string }>((resolve, reject) => {
        // Sent raw (fetch would normalise the path): an encoded `../` must not leave the page folder.
        get(`${base}/page/..%2f..%2f..%2fpackage.json`, (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode, body }));
        }).on('error', reject);
      });
      expect(escape.status).toBe(404);
      expect(JSON.parse(escape.body).error.code).toBe('http.not-found');
      const list = await (await fetch(`${base}/v1/runs?status=completed&limit=10`, { headers: auth })).json();
      expect(list.runs.map((r: any) => r.runId)).toContain(runId);

      // Typed errors.
      const missing = await fetch(`${base}/v1/runs/no-such-run`, { headers: auth });
      expect(missing.status).toBe(404);
      expect((await missing.json()).error.code).toBe('run.not-found');
      for (const path of [`/v1/runs/${runId}/events?afterSeq=minus`, '/v1/runs?limit=100000', '/v1/runs/%E0%A4%A']) {
        const bad = await fetch(`${base}${path}`, { headers: auth });
        expect(bad.status).toBe(400);
        expect((await bad.json()).error.code).toBe('http.bad-request');
      }
      const resumeBad = await fetch(stream, { headers: { ...auth, accept: 'text/event-stream', 'last-event-id': 'x' } });
      expect(resumeBad.status).toBe(400);
      const unknownRoute = await fetch(`${base}/v2/things`, { headers: auth });
      expect(unknownRoute.status).toBe(404);
      expect((await unknownRoute.json()).error.code).toBe('http.not-found');
      const post = await fetch(`${base}/v1/runs`, { method: 'POST', headers: auth });
      expect(post.status).toBe(405);

      // Without the token, or with another one, nothing is answered.
      for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: token }]) {
        for (const path of [`/v1/runs/${runId}`, '/v1/runs', `/v1/runs/${runId}/events`, `/v1/runs/${runId}/export`]) {
          const res = await fetch(`${base}${path}`, { headers: { accept: 'text/event-stream', ...headers } as Record<string, string> });
          expect(res.status).toBe(401);
          expect((await res.json()).error.code).toBe('http.unauthorized');
        }
      }
    } finally {
      server.child.kill('SIGTERM');
      await server.done;
    }
  }, 120_000);

  it('refuses to start without a token, and without one on a host that is not loopback', async () => {
    const w = liveWorld();
    const noToken = await runCli(w, ['serve', '--http', '0']);
    expect(noToken.code).toBe(2);
    expect(jsonLines(noToken.stdout).at(-1).error.code).toBe('http.no-token');
    const exposed = await runCli(w, ['serve', '--http', '0', '--http-host', '0.0.0.0', '--insecure-no-auth']);
    expect(exposed.code).toBe(2);
    expect(jsonLines(exposed.stdout).at(-1).error.code).toBe('http.insecure-non-loopback');
  }, 60_000);
});

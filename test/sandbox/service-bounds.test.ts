import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptEvaluator } from '../../sandbox/index.js';
import { createRemoteEvaluator, startSandboxService, type SandboxService } from '../../sandbox/service/index.js';
import { buildServiceBundles, workerUrl } from './build-worker.js';

const token = 'bounds-token-0123456789';
const auth = { authorization: `Bearer ${token}` };
const mib = 1024 * 1024;
let service: SandboxService;
let local: ScriptEvaluator;

beforeAll(async () => {
  await buildServiceBundles();
  local = await ScriptEvaluator.create();
  service = await startSandboxService({ token, workers: 2, queueLength: 8, workerUrl: workerUrl(), maxLimits: { fuel: 20_000, memoryBytes: 64 * mib } });
}, 30_000);
afterAll(async () => {
  await service?.close();
  local?.dispose();
});

async function post(url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(`${url}/v1/evaluate`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

describe('the service gives the in-process answers for bounded scripts', () => {
  const cases: [string, string, Record<string, number>][] = [
    // memoryBytes is enforced the same way in a worker (item: memory limit)
    ['const a = []; for (let i = 0; i < 3000; i++) a.push(new Array(4096).fill(7)); return a.length', 'null', { memoryBytes: 8 * mib, fuel: 5000 }],
    ['const a = []; for (let i = 0; i < 150; i++) a.push(new Array(4096).fill(7)); return a.length', 'null', { memoryBytes: 8 * mib }],
    // a deeply nested source is script.too-deep everywhere
    ['return ' + '{a:'.repeat(320) + '1' + '}'.repeat(320), 'null', {}],
    // built-ins pay fuel in a worker too
    ["(i) => 'a'.repeat(1e6).indexOf('a'.repeat(1e4) + 'b')", 'null', { fuel: 10 }],
    ['throw null', 'null', {}],
    ['(i) => ({ a: undefined, b: [undefined] })', 'null', {}],
  ];
  it('byte-identical outcomes', async () => {
    const remote = createRemoteEvaluator({ url: service.url, token });
    try {
      const codes: string[] = [];
      for (const [source, input, limits] of cases) {
        const expected = local.evaluate(source, input, limits);
        expect(await remote.evaluate(source, input, limits), source.slice(0, 40)).toEqual(expected);
        codes.push(expected.ok ? `ok ${expected.output}` : expected.error.code);
      }
      expect(codes).toEqual(['script.memory', 'ok 150', 'script.too-deep', 'script.fuel', 'script.runtime', 'ok {"b":[null]}']);
    } finally {
      await remote.close();
    }
  }, 30_000);
});

describe('request input', () => {
  it('refuses a deeply nested input with a typed 400, and the service keeps answering', async () => {
    const deep = '{"source":"return 1","input":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}';
    const res = await post(service.url, deep, auth);
    expect([res.status, JSON.parse(res.body).error.code]).toEqual([400, 'service.input-invalid']);
    expect((await post(service.url, '{"source":"return input","input":' + '['.repeat(64) + ']'.repeat(64) + '}', auth)).status).toBe(200);
  });
  it('refuses a number that is not finite instead of turning it into null', async () => {
    const res = await post(service.url, '{"source":"return input","input":{"a":1e999}}', auth);
    expect([res.status, JSON.parse(res.body).error.code]).toEqual([400, 'service.input-invalid']);
  });
});

describe('request bodies', () => {
  it('answers 401 without reading the body and closes the connection', async () => {
    const { port } = new URL(service.url);
    const socket = connect(Number(port), '127.0.0.1');
    let response = '';
    socket.on('data', (d) => (response += d.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => {});
    // Declares 100 MiB and sends only the first kilobyte.
    socket.write(`POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${100 * mib}\r\n\r\n` + 'x'.repeat(1024));
    // Hang detector: the server used to wait for the rest of the body (until its 60 s request timeout).
    const outcome = await Promise.race([closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open'), 5_000))]);
    socket.destroy();
    expect(outcome).toBe('closed');
    expect(response).toMatch(/^HTTP\/1\.1 401 /);
    expect(response).toMatch(/connection: close/i);
  });

  it('refuses bodies that would pass the RSS budget (503), and serves them once the queue drains', async () => {
    const s = await startSandboxService({ token, workers: 1, queueLength: 16, workerUrl: workerUrl(), maxLimits: { fuel: 20_000 }, rssBytesMax: 400 * mib });
    try {
      const runaway = post(s.url, JSON.stringify({ source: 'for (;;) {}', limits: { fuel: 20_000 } }), auth);
      for (let i = 0; i < 2000 && s.stats().running !== 1; i++) await new Promise((r) => setTimeout(r, 5));
      // ~1.9 MiB each: held four times over against the main thread's 32 MiB margin.
      const big = JSON.stringify({ source: 'return input.length', input: 'x'.repeat(1.9 * mib) });
      const pending: Promise<{ status: number; body: string }>[] = [];
      let refused: { status: number; body: string } | undefined;
      for (let i = 0; i < 8 && !refused; i++) {
        const p = post(s.url, big, auth);
        // Either it is queued (held) or refused at once.
        for (let j = 0; j < 400 && s.stats().queued === pending.length; j++) {
          const settled = await Promise.race([p, new Promise((r) => setTimeout(() => r(undefined), 5))]);
          if (settled) {
            refused = settled as { status: number; body: string };
            break;
          }
        }
        if (!refused) pending.push(p);
      }
      expect(refused?.status).toBe(503);
      expect(JSON.parse(refused!.body).error.code).toBe('service.overloaded');
      expect(pending.length).toBeGreaterThan(0);
      expect(pending.length).toBeLessThanOrEqual(4);
      expect(JSON.parse((await runaway).body).error.code).toBe('script.fuel');
      for (const r of await Promise.all(pending)) expect(r.body).toBe(`{"ok":true,"fuelUsed":0,"output":${Math.floor(1.9 * mib)}}`);
    } finally {
      await s.close();
    }
  }, 60_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptEvaluator } from '../../sandbox/index.js';
import { createRemoteEvaluator, RemoteEvaluatorError, ServiceConfigError, startSandboxService, type SandboxService } from '../../sandbox/service/index.js';
import { buildServiceBundles, workerUrl } from './build-worker.js';

const token = 'test-token-0123456789';
let service: SandboxService;
let local: ScriptEvaluator;

beforeAll(async () => {
  await buildServiceBundles();
  local = await ScriptEvaluator.create();
  service = await startSandboxService({ token, workers: 2, queueLength: 8, workerUrl: workerUrl(), maxLimits: { fuel: 20_000 } });
}, 30_000);
afterAll(async () => {
  await service?.close();
  local?.dispose();
});

async function post(url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(`${url}/v1/evaluate`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

describe('HTTP API', () => {
  it('answers /healthz without a token', async () => {
    const res = await fetch(`${service.url}/healthz`);
    expect([res.status, await res.text()]).toEqual([200, '{"ok":true}']);
  });
  it('evaluates with {source, input, limits}', async () => {
    const res = await post(service.url, JSON.stringify({ source: 'return input.a * 2', input: { a: 21 }, limits: { fuel: 10 } }), {
      authorization: `Bearer ${token}`,
    });
    expect([res.status, res.body]).toEqual([200, '{"ok":true,"fuelUsed":0,"output":42}']);
  });
  it('returns script errors as typed outcomes', async () => {
    const res = await post(service.url, JSON.stringify({ source: 'return Math.random()' }), { authorization: `Bearer ${token}` });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({
      ok: false,
      error: { code: 'script.forbidden', message: 'ForbiddenError: Math.random is not available in scripts', line: 1 },
    });
  });
  it('refuses missing and wrong tokens', async () => {
    const body = JSON.stringify({ source: 'return 1' });
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer nope' }, { authorization: token }];
    for (const headers of attempts) {
      const res = await post(service.url, body, headers);
      expect([res.status, JSON.parse(res.body).error.code, res.headers.get('www-authenticate')]).toEqual([401, 'service.unauthorized', 'Bearer']);
    }
  });
  it('refuses bad requests with a code', async () => {
    const auth = { authorization: `Bearer ${token}` };
    const cases: [string, number, string][] = [
      ['not json', 400, 'service.request-invalid'],
      ['{"source":1}', 400, 'service.request-invalid'],
      ['{"source":"1","extra":1}', 400, 'service.request-invalid'],
      ['{"source":"1","limits":{"fuel":20001}}', 400, 'service.limit-exceeded'],
      ['{"source":"1","limits":{"stackBytes":999999999}}', 400, 'service.limit-exceeded'],
    ];
    for (const [body, status, code] of cases) {
      const res = await post(service.url, body, auth);
      expect([res.status, JSON.parse(res.body).error.code], body).toEqual([status, code]);
    }
    const wrongType = await fetch(`${service.url}/v1/evaluate`, { method: 'POST', body: '{}', headers: { ...auth, 'content-type': 'text/plain' } });
    expect(wrongType.status).toBe(415);
    const get = await fetch(`${service.url}/v1/evaluate`, { headers: auth });
    expect(get.status).toBe(405);
    expect((await fetch(`${service.url}/nope`)).status).toBe(404);
  });
});

describe('remote evaluator', () => {
  const cases: [string, string][] = [
    ['return input.items.map((x) => ({ id: x.id, half: x.v / 2, s: String(x.v) }))', JSON.stringify({ items: [{ id: 1, v: 0.1 }, { id: 2, v: 1e21 }, { id: 3, v: -0 }] })],
    ['(i) => ({ text: i.t + "\\u{1F600}", lone: "\\ud800", big: 2 ** 60, tiny: 5e-324, neg: -0 })', '{"t":"é\\u2028"}'],
    ['return Object.is(input, -0)', '-0'],
    ['return { 10: 1, 2: 2, b: 3, a: 4 }', 'null'],
    ['let n = 0; for (let i = 0; i < 200000; i++) n += i % 7; return n', 'null'],
    ['return input.x.y', '{}'],
    ['const a = []; a[0] = a; return a', 'null'],
    ['return (', 'null'],
    ['for (;;) {}', 'null'],
  ];
  it('gives byte-identical outcomes to the in-process evaluator', async () => {
    const remote = createRemoteEvaluator({ url: service.url, token });
    try {
      for (const [source, input] of cases) {
        const limits = { fuel: 50 };
        expect(await remote.evaluate(source, input, limits), source).toEqual(local.evaluate(source, input, limits));
      }
    } finally {
      await remote.close();
    }
  });
  it('throws a typed error for service-level failures', async () => {
    const remote = createRemoteEvaluator({ url: service.url, token: 'wrong' });
    try {
      await expect(remote.evaluate('return 1', 'null')).rejects.toMatchObject({ code: 'service.unauthorized', status: 401 });
    } finally {
      await remote.close();
    }
    const dead = createRemoteEvaluator({ url: 'http://127.0.0.1:1', token });
    await expect(dead.evaluate('return 1', 'null')).rejects.toBeInstanceOf(RemoteEvaluatorError);
    await dead.close();
  });
});

describe('start-up refusals', () => {
  it('refuses to start without a token', async () => {
    await expect(startSandboxService({ env: {}, workerUrl: workerUrl() })).rejects.toMatchObject({ code: 'service.no-token' });
  });
  it('refuses insecureNoAuth off loopback', async () => {
    await expect(startSandboxService({ env: {}, insecureNoAuth: true, host: '0.0.0.0', workerUrl: workerUrl() })).rejects.toBeInstanceOf(ServiceConfigError);
  });
  it('fails to start, instead of retrying forever, when the worker module cannot load', async () => {
    await expect(startSandboxService({ token, workers: 1, workerUrl: new URL('file:///nonexistent/worker.js') })).rejects.toThrow();
  });
  it('serves without auth on loopback when asked', async () => {
    const open = await startSandboxService({ env: {}, insecureNoAuth: true, workers: 1, workerUrl: workerUrl() });
    try {
      const res = await post(open.url, '{"source":"return 7"}');
      expect(res.body).toBe('{"ok":true,"fuelUsed":0,"output":7}');
    } finally {
      await open.close();
    }
  });
});

describe('body limit, queue bound, isolation, shutdown', () => {
  // 10 000 fuel is about 1e8 interpreter polls: a worker stays busy far longer
  // than the few local requests each test sends while it runs.
  const runaway = JSON.stringify({ source: 'for (;;) {}', limits: { fuel: 10_000 } });
  const maxLimits = { fuel: 20_000 };

  it('answers 413 past the body limit', async () => {
    const small = await startSandboxService({ token, workers: 1, requestBodyBytesMax: 1024, workerUrl: workerUrl() });
    try {
      const res = await post(small.url, JSON.stringify({ source: `return "${'x'.repeat(2000)}"` }), { authorization: `Bearer ${token}` });
      expect([res.status, JSON.parse(res.body).error.code]).toEqual([413, 'service.body-too-large']);
      const after = await post(small.url, '{"source":"return 1"}', { authorization: `Bearer ${token}` });
      expect(after.status).toBe(200);
    } finally {
      await small.close();
    }
  });

  it('answers 429 when the queue is full', async () => {
    const tiny = await startSandboxService({ token, workers: 1, queueLength: 1, workerUrl: workerUrl(), maxLimits });
    const auth = { authorization: `Bearer ${token}` };
    try {
      const first = post(tiny.url, runaway, auth);
      await until(() => tiny.stats().running === 1);
      const second = post(tiny.url, '{"source":"return 2"}', auth);
      await until(() => tiny.stats().queued === 1);
      const third = await post(tiny.url, '{"source":"return 3"}', auth);
      expect([third.status, JSON.parse(third.body).error.code, third.headers.get('retry-after')]).toEqual([429, 'service.queue-full', '1']);
      expect(JSON.parse((await first).body).error.code).toBe('script.fuel');
      expect((await second).body).toBe('{"ok":true,"fuelUsed":0,"output":2}');
    } finally {
      await tiny.close();
    }
  }, 30_000);

  it('keeps serving while one worker runs a runaway script', async () => {
    const order: string[] = [];
    const auth = { authorization: `Bearer ${token}` };
    // The largest fuel this service allows: far more work than five small requests.
    const slow = post(service.url, JSON.stringify({ source: 'for (;;) {}', limits: { fuel: 20_000 } }), auth).then((r) => {
      order.push('runaway');
      return r;
    });
    await until(() => service.stats().running === 1);
    for (let i = 0; i < 5; i++) {
      const r = await post(service.url, JSON.stringify({ source: `return ${i}` }), auth);
      expect(r.body).toBe(`{"ok":true,"fuelUsed":0,"output":${i}}`);
      order.push(`quick${i}`);
    }
    expect(JSON.parse((await slow).body).error.code).toBe('script.fuel');
    expect(order).toEqual(['quick0', 'quick1', 'quick2', 'quick3', 'quick4', 'runaway']);
  }, 30_000);

  it('replaces a worker whose linear memory grew past the retain bound, with the same results', async () => {
    const s = await startSandboxService({ token, workers: 1, workerUrl: workerUrl(), maxLimits: { ...maxLimits, memoryBytes: 64 * 1024 * 1024 } });
    const auth = { authorization: `Bearer ${token}` };
    try {
      // About 48 MiB of arrays: the module grows well past 32 MiB and succeeds.
      const grow = JSON.stringify({ source: 'const a = []; for (let i = 0; i < 1500; i++) a.push(new Array(4096).fill(7)); return a.length', limits: { fuel: 5000, memoryBytes: 64 * 1024 * 1024 } });
      const first = await post(s.url, grow, auth);
      expect(JSON.parse(first.body)).toMatchObject({ ok: true, output: 1500 });
      await until(() => s.stats().replaced === 1 && s.stats().recycling === 0);
      expect((await post(s.url, grow, auth)).body).toBe(first.body);
      const small = await post(s.url, JSON.stringify({ source: 'return input + 1', input: 1 }), auth);
      expect(small.body).toBe('{"ok":true,"fuelUsed":0,"output":2}');
      await until(() => s.stats().replaced === 2 && s.stats().recycling === 0);
      const res = await fetch(`${s.url}/v1/stats`, { headers: auth });
      expect(await res.json()).toMatchObject({ ok: true, queued: 0, running: 0, ready: 1, recycling: 0, replaced: 2, memoryBudget: null });
      expect((await fetch(`${s.url}/v1/stats`)).status).toBe(401);
    } finally {
      await s.close();
    }
  }, 30_000);

  it('refuses an RSS cap too small for its workers', async () => {
    await expect(startSandboxService({ token, workers: 2, workerUrl: workerUrl(), rssBytesMax: 64 * 1024 * 1024 })).rejects.toMatchObject({
      code: 'service.invalid-option',
      message: expect.stringMatching(/too small for 2 worker/),
    });
  });

  it('finishes in-flight requests on close and refuses new ones', async () => {
    const s = await startSandboxService({ token, workers: 1, workerUrl: workerUrl(), maxLimits });
    const auth = { authorization: `Bearer ${token}` };
    const inFlight = post(s.url, JSON.stringify({ source: 'let n = 0; for (let i = 0; i < 3e6; i++) n += 1; return n', limits: { fuel: 5000 } }), auth);
    await until(() => s.stats().running === 1);
    const closing = s.close();
    const res = await inFlight;
    expect([res.status, res.body]).toEqual([200, '{"ok":true,"fuelUsed":600,"output":3000000}']);
    await closing;
    await expect(fetch(`${s.url}/healthz`)).rejects.toThrow();
  }, 30_000);
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!condition()) throw new Error('condition not reached');
}

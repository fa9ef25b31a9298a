// The webhook adapter over real HTTP on loopback: two `agent-workflow serve --http` processes on
// one store (a SQLite file; a PostgreSQL schema). Every refusal is answered with its status and code and recorded in the ingress
// journal; one event delivered 1,000 times at once to two processes makes exactly one run.
import { createHash } from 'node:crypto';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgUrl, testSchema } from '../helpers/postgres.js';
import { cliOk, echo, postHook, publishBinding, publishTemplate, serve, until, world, type Server, type World } from './helpers.js';

const secret = 'whsec-test-1234567890';
const env = { HOOK_SECRET: secret };
const opensslHex = '49f24e537407743fa4a0242bb63b94b9a47ee99cbbe071ccd8a22550ae411686';

const digest = (body: string) => `sha256:${createHash('sha256').update(body).digest('hex')}`;

const schema = testSchema('adw_trig_hook');

const stores: [string, Record<string, string>][] = [
  ['SQLite', {}],
  ['PostgreSQL', { STORE: `${pgUrl}?schema=${schema}` }],
];

describe.each(stores)('webhook triggers over HTTP (%s)', (_name, storeEnv) => {
  let w: World;
  let a: Server;
  let b: Server;
  beforeAll(async () => {
    w = world({ ...env, ...storeEnv });
    await publishTemplate(w, echo);
    await publishBinding(w, { id: 'hook', source: 'webhook', config: { secretRef: 'HOOK_SECRET', toleranceSeconds: 60 }, target: 'echo@1', input: { text: { pointer: '/body/message/text' } } });
    await publishBinding(w, { id: 'off', source: 'webhook', config: { secretRef: 'HOOK_SECRET' }, target: 'echo@1', input: { text: { literal: 'x' } } });
    await cliOk(w, ['binding', 'disable', 'off']);
    [a, b] = await Promise.all([serve(w), serve(w)]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('signs as documented: HMAC-SHA256 over "<timestamp>.<body>", hex', async () => {
    const { signWebhook } = await import('../../dist/hosts/node/index.js');
    // openssl's: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac secret -hex
    expect(signWebhook('secret', 1700000000, '{"a":1}')).toBe(`sha256=${opensslHex}`);
  });

  it('accepts a signed event with 202 and the run id; the run completes with the mapped input', async () => {
    const body = JSON.stringify({ message: { text: 'hello' } });
    const reply = await postHook(a.url, 'hook', body, { secret, eventId: 'evt-ok' });
    expect(reply).toEqual({ status: 202, body: { runId: expect.stringMatching(/^i-[0-9a-f]{32}$/), deduplicated: false } });
    const run = await until('the run to complete', async () => {
      const res = await request(`${b.url}/v1/runs/${reply.body.runId}`);
      const view = (await res.body.json()) as any;
      return view.status === 'completed' ? view : undefined;
    });
    expect(run.output).toEqual({ echoed: 'hello' });
    // A second delivery, to the other process, answers the first run.
    expect(await postHook(b.url, 'hook', body, { secret, eventId: 'evt-ok' })).toEqual({ status: 202, body: { runId: reply.body.runId, deduplicated: true } });
  });

  it('without an event id, deduplicates on the digest of the body', async () => {
    const body = JSON.stringify({ message: { text: 'no id' } });
    const first = await postHook(a.url, 'hook', body, { secret });
    const second = await postHook(b.url, 'hook', body, { secret, timestamp: Math.floor(Date.now() / 1000) - 5 });
    expect(first.status).toBe(202);
    expect(second.body).toEqual({ runId: first.body.runId, deduplicated: true });
  });

  it('refuses every bad request with its status and code, and records each refusal', async () => {
    const body = JSON.stringify({ message: { text: 'x' } });
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, Promise<{ status: number; body: any }>, number, string][] = [
      ['bad signature', postHook(a.url, 'hook', body, { secret: 'wrong-secret', eventId: 'r1' }), 401, 'webhook.bad-signature'],
      ['signature of another body', postHook(a.url, 'hook', body, { signature: `sha256=${'0'.repeat(64)}`, eventId: 'r2' }), 401, 'webhook.bad-signature'],
      ['expired', postHook(a.url, 'hook', body, { secret, timestamp: now - 3600, eventId: 'r3' }), 401, 'webhook.timestamp-expired'],
      ['from the future', postHook(a.url, 'hook', body, { secret, timestamp: now + 3600, eventId: 'r4' }), 401, 'webhook.timestamp-expired'],
      ['unsigned', postHook(a.url, 'hook', body, { eventId: 'r5' }), 401, 'webhook.signature-missing'],
      ['unknown binding', postHook(a.url, 'nope', body, { secret, eventId: 'r6' }), 404, 'binding.not-found'],
      ['disabled binding', postHook(a.url, 'off', body, { secret, eventId: 'r7' }), 404, 'binding.not-found'],
      ['not JSON', postHook(a.url, 'hook', '{"message":', { secret, eventId: 'r8' }), 400, 'webhook.bad-json'],
      ['not a JSON content type', postHook(a.url, 'hook', body, { secret, eventId: 'r9', contentType: 'text/plain' }), 415, 'webhook.unsupported-media'],
      ['nothing to map', postHook(a.url, 'hook', JSON.stringify({ other: 1 }), { secret, eventId: 'r10' }), 422, 'trigger.mapping-failed'],
      ['input of the wrong type', postHook(a.url, 'hook', JSON.stringify({ message: { text: 42 } }), { secret, eventId: 'r11' }), 422, 'trigger.input-invalid'],
      ['too large', postHook(a.url, 'hook', JSON.stringify({ message: { text: 'x'.repeat(1024 * 1024 + 10) } }), { secret, eventId: 'r12' }), 413, 'webhook.body-too-large'],
    ];
    for (const [what, reply, status, code] of cases) {
      const r = await reply;
      expect({ what, status: r.status, code: r.body.error?.code, message: typeof r.body.error?.message }).toEqual({ what, status, code, message: 'string' });
    }
    // A GET on a hook route is refused too.
    expect((await request(`${a.url}/v1/hooks/hook`)).statusCode).toBe(405);
    const list = await cliOk(w, ['ingress', 'list', '--status', 'rejected', '--limit', '100']);
    // The mapping's refusals come after verification: their event id is the body's digest (the id header is unsigned).
    const named = new Map([[digest(JSON.stringify({ other: 1 })), 'r10'], [digest(JSON.stringify({ message: { text: 42 } })), 'r11']]);
    const byEvent = new Map(list.records.map((r: any) => [named.get(r.sourceEventId) ?? r.sourceEventId ?? `(${r.reasonCode})`, r]));
    for (const [id, code] of [['r1', 'webhook.bad-signature'], ['r2', 'webhook.bad-signature'], ['r3', 'webhook.timestamp-expired'], ['r4', 'webhook.timestamp-expired'], ['r5', 'webhook.signature-missing'], ['r6', 'binding.not-found'], ['r7', 'binding.not-found'], ['r8', 'webhook.bad-json'], ['r9', 'webhook.unsupported-media'], ['r10', 'trigger.mapping-failed'], ['r11', 'trigger.input-invalid']]) {
      expect(byEvent.get(id)).toMatchObject({ status: 'rejected', reasonCode: code, reason: expect.any(String) });
    }
    expect(byEvent.get('(webhook.body-too-large)')).toMatchObject({ status: 'rejected', bindingId: 'hook' });
    expect(list.records.filter((r: any) => r.runId !== undefined)).toEqual([]);
    // None of them made a run: only the two accepted events did.
    const runs = await cliOk(w, ['runs', '--limit', '100']);
    expect(runs.runs).toHaveLength(2);
  });

  it('makes exactly one run of one event delivered 1,000 times concurrently to two serve processes', async () => {
    const body = JSON.stringify({ message: { text: 'storm' } });
    const timestamp = Math.floor(Date.now() / 1000);
    const dispatcher = new Agent({ connections: 64 });
    try {
      const replies = await Promise.all(
        Array.from({ length: 1000 }, (_, i) => postHookVia(dispatcher, i % 2 === 0 ? a.url : b.url, body, timestamp)),
      );
      expect(replies.filter((r) => r.status !== 202)).toEqual([]);
      const runIds = new Set(replies.map((r) => r.body.runId));
      expect(runIds.size).toBe(1);
      expect(replies.filter((r) => r.body.deduplicated === false)).toHaveLength(1);
      const [runId] = runIds;
      const records = (await cliOk(w, ['ingress', 'list', '--binding', 'hook', '--limit', '5000'])).records.filter((r: any) => r.sourceEventId === digest(body));
      expect(records.filter((r: any) => r.status === 'launched')).toEqual([expect.objectContaining({ runId })]);
      expect(records.filter((r: any) => r.status === 'deduplicated')).toHaveLength(999);
      const runs = (await cliOk(w, ['runs', '--limit', '100'])).runs;
      expect(runs).toHaveLength(3);
      expect(runs.filter((r: any) => r.runId === runId)).toHaveLength(1);
    } finally {
      await dispatcher.close();
    }
  });
});

async function postHookVia(dispatcher: Agent, url: string, body: string, timestamp: number): Promise<{ status: number; body: any }> {
  const { signWebhook } = await import('../../dist/hosts/node/index.js');
  const res = await request(`${url}/v1/hooks/hook`, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/json', 'x-adw-timestamp': String(timestamp), 'x-adw-signature': signWebhook(secret, timestamp, body), 'x-adw-event-id': 'storm-1' },
    body,
  });
  return { status: res.statusCode, body: await res.body.json() };
}

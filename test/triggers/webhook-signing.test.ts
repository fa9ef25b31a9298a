// Webhook signing schemes over real HTTP on loopback (a `serve` process on a SQLite file): the
// Standard Webhooks scheme signs the event id, so a forged id is refused; the adw scheme does not,
// so it deduplicates on the body's digest and a captured request replayed with forged ids
// starts one run.
import { createHash, createHmac } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliOk, echo, postHook, publishBinding, publishTemplate, serve, type Server, type World, world } from './helpers.js';

const key = Buffer.from('0123456789abcdef0123456789abcdef');
const secret = `whsec_${key.toString('base64')}`;

/** Standard Webhooks, computed here from the specification rather than with the product's helper. */
const v1 = (id: string, ts: number, body: string, k: Buffer = key) => `v1,${createHmac('sha256', k).update(`${id}.${ts}.${body}`).digest('base64')}`;

async function postStandard(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await request(`${url}/v1/hooks/hook`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: res.statusCode, body: await res.body.json() };
}

describe('webhook signing schemes', () => {
  let w: World;
  let s: Server;
  beforeAll(async () => {
    w = world({ HOOK_SECRET: secret });
    await publishTemplate(w, echo);
    await publishBinding(w, { id: 'hook', source: 'webhook', config: { secretRef: 'HOOK_SECRET', toleranceSeconds: 60 }, target: 'echo@1', input: { text: { pointer: '/body/text' } } });
    s = await serve(w);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('adw scheme: one captured request replayed with 7 forged event ids starts 1 run', async () => {
    const body = JSON.stringify({ text: 'captured' });
    const timestamp = Math.floor(Date.now() / 1000);
    const replies = [];
    for (const id of ['orig', 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7']) replies.push(await postHook(s.url, 'hook', body, { secret, timestamp, eventId: id }));
    const runIds = new Set(replies.map((r) => r.body.runId));
    expect(replies.map((r) => [r.status, r.body.deduplicated])).toEqual([[202, false], ...Array.from({ length: 7 }, () => [202, true])]);
    expect(runIds.size).toBe(1);
    const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    const launched = (await cliOk(w, ['ingress', 'list', '--status', 'launched', '--limit', '100'])).records.filter((r: any) => r.runId === [...runIds][0]);
    expect(launched).toEqual([expect.objectContaining({ sourceEventId: digest })]);
  });

  it('Standard Webhooks: accepts a whsec_ signature over id.timestamp.body, dedupes on the signed id, refuses a forged id', async () => {
    const body = JSON.stringify({ text: 'standard' });
    const ts = Math.floor(Date.now() / 1000);
    const first = await postStandard(s.url, body, { 'webhook-id': 'msg_1', 'webhook-timestamp': String(ts), 'webhook-signature': v1('msg_1', ts, body) });
    expect(first).toEqual({ status: 202, body: { runId: expect.stringMatching(/^i-[0-9a-f]{32}$/), deduplicated: false } });
    // The same event again: the first run.
    expect(await postStandard(s.url, body, { 'webhook-id': 'msg_1', 'webhook-timestamp': String(ts), 'webhook-signature': v1('msg_1', ts, body) })).toEqual({ status: 202, body: { runId: first.body.runId, deduplicated: true } });
    // The captured signature with a forged id: refused.
    const forged = await postStandard(s.url, body, { 'webhook-id': 'msg_forged', 'webhook-timestamp': String(ts), 'webhook-signature': v1('msg_1', ts, body) });
    expect(forged).toEqual({ status: 401, body: { error: { code: 'webhook.bad-signature', message: 'the signature does not match the id, timestamp and body' } } });
    // Several signatures (a secret being rotated): one that matches is enough.
    const rotated = await postStandard(s.url, body, { 'webhook-id': 'msg_2', 'webhook-timestamp': String(ts), 'webhook-signature': `${v1('msg_2', ts, body, Buffer.from('old-key'))} ${v1('msg_2', ts, body)}` });
    expect(rotated).toEqual({ status: 202, body: { runId: expect.stringMatching(/^i-/), deduplicated: false } });
    expect(rotated.body.runId).not.toBe(first.body.runId);
    // Outside the tolerance window; junk after the signature; a missing id.
    const old = ts - 3600;
    expect((await postStandard(s.url, body, { 'webhook-id': 'msg_3', 'webhook-timestamp': String(old), 'webhook-signature': v1('msg_3', old, body) })).body.error.code).toBe('webhook.timestamp-expired');
    expect((await postStandard(s.url, body, { 'webhook-id': 'msg_4', 'webhook-timestamp': String(ts), 'webhook-signature': `${v1('msg_4', ts, body)}x` })).body.error.code).toBe('webhook.bad-signature');
    expect((await postStandard(s.url, body, { 'webhook-timestamp': String(ts), 'webhook-signature': v1('msg_5', ts, body) })).body.error.code).toBe('webhook.signature-missing');
  });
});

// Bodies and binding files built to break the parser or the engine, against a real `serve`
// process and the CLI: each answers a typed 4xx (or the documented exit code), never a 500, a
// stack overflow or exit 70.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { signDingtalk } from '../../dist/hosts/node/index.js';
import { cliRun, echo, lastJson, postHook, publishBinding, publishTemplate, serve, type Server, type World, world } from './helpers.js';

const secret = 'bad-input-secret-0123456789';
const appSecret = 'bad-input-app-secret';
const nested = (depth: number, leaf = '1') => `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`;

describe('bad trigger input', () => {
  let w: World;
  let s: Server;
  beforeAll(async () => {
    w = world({ HOOK_SECRET: secret, APP_SECRET: appSecret });
    await publishTemplate(w, echo);
    await publishBinding(w, { id: 'hook', source: 'webhook', config: { secretRef: 'HOOK_SECRET' }, target: 'echo@1', input: { text: { pointer: '/body/text', default: 'd' } } });
    await publishBinding(w, { id: 'robot', source: 'dingtalk', config: { appSecretRef: 'APP_SECRET', senders: { u1: 'alice@example.com' } }, target: 'echo@1', input: { text: { pointer: '/args/text' } } });
    s = await serve(w);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('a webhook body nested 70 deep, 200,000 deep, or with 1e999 answers a typed 4xx; the server goes on', async () => {
    expect(await postHook(s.url, 'hook', `{"text":"x","deep":${nested(70)}}`, { secret })).toEqual({ status: 413, body: { error: { code: 'webhook.too-deep', message: 'the JSON is nested deeper than 63 levels' } } });
    expect(await postHook(s.url, 'hook', nested(200_000), { secret })).toEqual({ status: 413, body: { error: { code: 'webhook.too-deep', message: 'the JSON is nested deeper than 63 levels' } } });
    expect(await postHook(s.url, 'hook', '{"text":"x","n":1e999}', { secret })).toEqual({ status: 400, body: { error: { code: 'webhook.bad-number', message: 'the JSON at /n is out of range: Infinity is not a JSON number' } } });
    // Brackets inside strings are not nesting.
    expect(await postHook(s.url, 'hook', JSON.stringify({ text: nested(100) }), { secret })).toEqual({ status: 202, body: { runId: expect.stringMatching(/^i-/), deduplicated: false } });
  });

  it('a DingTalk callback 200,000 deep is refused without taking the server down', async () => {
    const timestamp = Date.now();
    const deep = await request(`${s.url}/v1/dingtalk/robot`, { method: 'POST', headers: { 'content-type': 'application/json', timestamp: String(timestamp), sign: signDingtalk(appSecret, timestamp) }, body: nested(200_000) });
    expect({ status: deep.statusCode, body: await deep.body.json() }).toEqual({ status: 400, body: { error: { code: 'dingtalk.bad-message', message: 'the callback body is not a DingTalk message with a msgId' } } });
    expect(await postHook(s.url, 'hook', JSON.stringify({ text: 'alive' }), { secret })).toMatchObject({ status: 202 });
  });

  it('a binding file nested 5,000 deep: binding.invalid, exit 3', async () => {
    const file = join(w.dir, 'deep-binding.json');
    writeFileSync(file, `{"id":"deep","source":"webhook","config":{"secretRef":"HOOK_SECRET"},"target":"echo@1","input":{"text":{"literal":${nested(5000, '"x"')}}}}`);
    const r = await cliRun(w, ['binding', 'put', file]);
    expect(r.code).toBe(3);
    const out = lastJson(r.stdout || r.stderr);
    expect(out.error ?? out).toMatchObject({ code: 'binding.invalid' });
  });
});

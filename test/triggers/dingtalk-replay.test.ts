// A DingTalk sign covers the timestamp only, so each (timestamp, sign) is usable once, across
// `serve` processes on one store (a SQLite file; a PostgreSQL schema); the window is 5 minutes and
// the sign must be exact base64.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signDingtalk } from '../../dist/hosts/node/index.js';
import { pgUrl, testSchema } from '../helpers/postgres.js';
import { approvalFlow, cliOk, postDingtalk, publishBinding, publishTemplate, serve, type Server, type World, world } from './helpers.js';

const appSecret = 'dingtalk-replay-app-secret';
const schema = testSchema('adw_trig_dtreplay');
const stores: [string, Record<string, string>][] = [
  ['SQLite', {}],
  ['PostgreSQL', { STORE: `${pgUrl}?schema=${schema}` }],
];

const message = (content: string, sender = 'staff-alice') => ({ msgId: randomUUID(), msgtype: 'text', text: { content }, senderStaffId: sender, conversationId: 'c1' });

describe.each(stores)('DingTalk signs are usable once (%s)', (_name, storeEnv) => {
  let w: World;
  let a: Server;
  let b: Server;
  beforeAll(async () => {
    w = world({ DT_SECRET: appSecret, ...storeEnv });
    await publishTemplate(w, approvalFlow);
    await publishBinding(w, { id: 'robot', source: 'dingtalk', config: { appSecretRef: 'DT_SECRET', senders: { 'staff-alice': 'alice@example.com', 'staff-bob': 'bob@example.com' } }, target: 'approve-echo@1', input: { text: { pointer: '/args/text' } } });
    [a, b] = await Promise.all([serve(w), serve(w)]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('refuses a captured (timestamp, sign) with a forged body at another worker', async () => {
    const timestamp = Date.now();
    const sign = signDingtalk(appSecret, timestamp);
    const first = await postDingtalk(a.url, 'robot', message('run {"text":"one"}'), { appSecret, timestamp, sign });
    expect(first.status).toBe(200);
    expect(first.body.text.content).toMatch(/^run i-[0-9a-f]{32} started$/);
    const forged = await postDingtalk(b.url, 'robot', message('run {"text":"forged"}', 'staff-bob'), { appSecret, timestamp, sign });
    expect(forged).toEqual({ status: 401, body: { error: { code: 'dingtalk.sign-replayed', message: 'this timestamp and sign were used before: each callback signature is accepted once' } } });
    const again = await postDingtalk(a.url, 'robot', message('status x'), { appSecret, timestamp, sign });
    expect(again.body.error.code).toBe('dingtalk.sign-replayed');
    const rejected = (await cliOk(w, ['ingress', 'list', '--binding', 'robot', '--status', 'rejected'])).records;
    expect(rejected.map((r: any) => r.reasonCode)).toEqual(['dingtalk.sign-replayed', 'dingtalk.sign-replayed']);
    expect((await cliOk(w, ['runs'])).runs).toHaveLength(1);
  });

  it('refuses trailing junk after the base64 sign, and a timestamp 10 minutes old', async () => {
    const timestamp = Date.now() + 1;
    const junk = await postDingtalk(a.url, 'robot', message('status x'), { appSecret, timestamp, sign: `${signDingtalk(appSecret, timestamp)}!!` });
    expect(junk).toEqual({ status: 401, body: { error: { code: 'dingtalk.bad-sign-encoding', message: 'the sign is not the base64 of an HMAC-SHA256 (44 characters, nothing before or after)' } } });
    const old = Date.now() - 10 * 60 * 1000;
    const stale = await postDingtalk(a.url, 'robot', message('status x'), { appSecret, timestamp: old });
    expect(stale).toEqual({ status: 401, body: { error: { code: 'dingtalk.timestamp-expired', message: `the timestamp "${old}" is more than 300 s from the server's clock` } } });
  });
});

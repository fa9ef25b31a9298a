// The DingTalk adapter over real HTTP on loopback: robot callbacks signed as DingTalk signs them
// (timestamp + base64 HMAC-SHA256 of `${timestamp}\n${appSecret}`), a one-hour window, senders
// mapped to approver identities by the binding, and the commands run, status and approve, each
// answered with a DingTalk text message.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signDingtalk } from '../../dist/hosts/node/index.js';
import { approvalFlow, cliOk, echo, postDingtalk, publishBinding, publishTemplate, serve, until, world, type Server, type World } from './helpers.js';

const appSecret = 'SEC-dingtalk-app-secret';

function message(text: string, sender = 'staff-alice', msgId: string = randomUUID()) {
  return { msgId, msgtype: 'text', text: { content: ` ${text}` }, senderStaffId: sender, senderId: `$:LWCP_v1:$${sender}`, senderNick: sender, conversationId: 'cid-1', conversationType: '2', sessionWebhook: 'http://127.0.0.1:9/robot/sendBySession?session=x' };
}

const text = (reply: { body: any }) => {
  expect(reply.body.msgtype).toBe('text');
  return reply.body.text.content as string;
};

describe('DingTalk robot callbacks', () => {
  let w: World;
  let s: Server;
  beforeAll(async () => {
    w = world({ DT_SECRET: appSecret });
    await publishTemplate(w, approvalFlow);
    await publishTemplate(w, echo);
    await publishBinding(w, { id: 'robot', source: 'dingtalk', config: { appSecretRef: 'DT_SECRET', senders: { 'staff-alice': 'alice@example.com', 'staff-bob': { approver: 'bob@example.com', authority: 'ops-bob' } } }, target: 'approve-echo@1', input: { text: { pointer: '/args/text' } }, authority: 'dingtalk-robot' });
    s = await serve(w);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('signs as DingTalk documents it', () => {
    // HMAC-SHA256 keyed with the AppSecret over "<timestamp>\n<AppSecret>", base64; the value is
    // openssl's: printf '1700000000000\nsecret' | openssl dgst -sha256 -hmac secret -binary | base64
    expect(signDingtalk('secret', 1700000000000)).toBe('OuzzJR5+xZ4/EYwqtNt6sMYZQMTa/HEGvc9miJe7XzY=');
  });

  it('refuses a bad sign, an expired timestamp and an unknown binding, and records them', async () => {
    const bad = await postDingtalk(s.url, 'robot', message('run {"text":"x"}', 'staff-alice', 'm-bad'), { appSecret: 'wrong' });
    expect(bad).toMatchObject({ status: 401, body: { error: { code: 'dingtalk.bad-sign' } } });
    const expired = await postDingtalk(s.url, 'robot', message('run {"text":"x"}', 'staff-alice', 'm-old'), { appSecret, timestamp: Date.now() - 61 * 60 * 1000 });
    expect(expired).toMatchObject({ status: 401, body: { error: { code: 'dingtalk.timestamp-expired' } } });
    const unknown = await postDingtalk(s.url, 'nobody', message('run', 'staff-alice', 'm-404'), { appSecret });
    expect(unknown).toMatchObject({ status: 404, body: { error: { code: 'binding.not-found' } } });
    const stranger = await postDingtalk(s.url, 'robot', message('run {"text":"x"}', 'staff-mallory', 'm-stranger'), { appSecret });
    expect(text(stranger)).toContain('not allowed');
    const records = (await cliOk(w, ['ingress', 'list', '--status', 'rejected'])).records;
    const byEvent = Object.fromEntries(records.map((r: any) => [r.sourceEventId, r.reasonCode]));
    expect(byEvent).toMatchObject({ 'm-bad': 'dingtalk.bad-sign', 'm-old': 'dingtalk.timestamp-expired', 'm-404': 'binding.not-found', 'm-stranger': 'dingtalk.sender-not-allowed' });
    expect((await cliOk(w, ['runs'])).runs).toEqual([]);
  });

  it('runs, reports status and takes an approval from the mapped identity', async () => {
    // Within the window of 5 minutes.
    const start = message('run {"text":"from dingtalk"}');
    const started = text(await postDingtalk(s.url, 'robot', start, { appSecret, timestamp: Date.now() - 4 * 60 * 1000 }));
    const runId = /^run (i-[0-9a-f]{32}) started$/.exec(started)?.[1];
    expect(runId, started).toBeDefined();
    // DingTalk delivers a message again: the same run.
    expect(text(await postDingtalk(s.url, 'robot', start, { appSecret }))).toBe(`run ${runId} was already started for this message`);
    const waiting = await until('the run to wait for its approval', async () => {
      const reply = text(await postDingtalk(s.url, 'robot', message(`status ${runId}`), { appSecret }));
      return reply.includes('waiting for approval of gate') ? reply : undefined;
    });
    expect(waiting).toBe(`run ${runId}: paused (approval); waiting for approval of gate`);
    // Bob's identity is not among the node's approvers.
    expect(text(await postDingtalk(s.url, 'robot', message(`approve ${runId} gate`, 'staff-bob'), { appSecret }))).toContain('refused: approval.not-allowed');
    const approved = text(await postDingtalk(s.url, 'robot', message(`approve ${runId} gate`), { appSecret }));
    expect(approved).toMatch(new RegExp(`^approved gate of run ${runId} as alice@example\\.com; the run is (running|completed)$`));
    await until('the run to complete', async () => text(await postDingtalk(s.url, 'robot', message(`status ${runId}`), { appSecret })) === `run ${runId}: completed`);
    const trace = (await cliOk(w, ['runs'])).runs.find((r: any) => r.runId === runId);
    expect(trace.status).toBe('completed');
    // The run's authority is the binding's reference (alice names none of her own).
    const events = (await cliOk(w, ['trace', runId!, '--format', 'json'])).events;
    expect(events[0].payload.authority.id).toBe('dingtalk-robot');
    const records = (await cliOk(w, ['ingress', 'list', '--binding', 'robot', '--run', runId!])).records;
    expect(records[0]).toMatchObject({ status: 'launched', source: 'dingtalk', caller: 'dingtalk:staff-alice', sourceEventId: start.msgId });
    expect(records.slice(1).every((r: any) => r.status === 'received' || r.status === 'deduplicated')).toBe(true);
  });

  it("starts a sender's runs with the sender's own authority reference", async () => {
    const started = text(await postDingtalk(s.url, 'robot', message('run {"text":"bob"}', 'staff-bob'), { appSecret }));
    const runId = /^run (i-[0-9a-f]{32}) started$/.exec(started)?.[1];
    expect(runId, started).toBeDefined();
    const events = (await cliOk(w, ['trace', runId!, '--format', 'json'])).events;
    expect(events[0].payload.authority.id).toBe('ops-bob');
  });

  it('answers unknown commands, bad input and runs of other bindings in text', async () => {
    expect(text(await postDingtalk(s.url, 'robot', message('dance'), { appSecret }))).toContain('unknown command "dance"');
    expect(text(await postDingtalk(s.url, 'robot', message('run {oops'), { appSecret }))).toContain('run: the input is not JSON');
    expect(text(await postDingtalk(s.url, 'robot', message('run {"other":1}'), { appSecret }))).toContain('refused: trigger.mapping-failed');
    expect(text(await postDingtalk(s.url, 'robot', message('status i-00000000000000000000000000000000'), { appSecret }))).toContain('there is no run i-00000000000000000000000000000000 started through this robot');
  });
});

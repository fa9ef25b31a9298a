// The trigger case end to end, over real HTTP on loopback: a DingTalk robot callback (`run …`)
// starts a run of a published binding; the run waits for an approval, which is delivered to the
// DingTalk robot (a DingTalk-shaped server that checks every request as the robot API documents
// it); the approval is given from DingTalk (`approve <runId> <node>`); the result is delivered
// back to the robot. One `serve` process does all of it: the callback route, the worker that runs
// the queued run, and the sender of its deliveries.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DingTalkRobot } from '../helpers/dingtalk-robot.js';
import { approvalFlow, cliOk, postDingtalk, publishBinding, publishTemplate, serve, until, world, type Server } from './helpers.js';

const appSecret = 'SEC-callback-app-secret';
const robotSecret = 'SEC-robot-send-secret';

function message(text: string, sender: string) {
  return { msgId: randomUUID(), msgtype: 'text', text: { content: ` ${text}` }, senderStaffId: sender, senderNick: sender, conversationId: 'cid-ops', conversationType: '2' };
}

function replyText(reply: { status: number; body: any }): string {
  expect(reply.status).toBe(200);
  expect(reply.body.msgtype).toBe('text');
  return reply.body.text.content as string;
}

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

describe('the trigger case end to end', () => {
  it('a DingTalk message starts a run that needs an approval; the approval is given from DingTalk; the result is delivered back', async () => {
    const robot = await new DingTalkRobot('ops-robot-token', robotSecret).start();
    cleanup.push(() => robot.close());
    const w = world({ DT_APP_SECRET: appSecret, DT_ROBOT_SECRET: robotSecret, DT_ROBOT_TOKEN: robot.accessToken });
    await publishTemplate(w, approvalFlow);
    await publishBinding(w, {
      id: 'ops-robot',
      source: 'dingtalk',
      config: { appSecretRef: 'DT_APP_SECRET', senders: { 'staff-alice': 'alice@example.com' } },
      target: 'approve-echo@1',
      input: { text: { pointer: '/args/text' } },
      authority: 'dingtalk-robot',
      delivery: { kind: 'dingtalk', webhookUrl: robot.webhookUrl, secretRef: 'DT_ROBOT_SECRET', accessTokenRef: 'DT_ROBOT_TOKEN' },
    });
    const server: Server = await serve(w, {}, ['--delivery-backoff-ms', '50']);
    cleanup.push(() => server.stop());

    // 1. The message starts a run (queued with the binding's delivery target, run by the worker).
    const started = replyText(await postDingtalk(server.url, 'ops-robot', message('run {"text":"ship it"}', 'staff-alice'), { appSecret }));
    const runId = /^run (i-[0-9a-f]{32}) started$/.exec(started)?.[1];
    expect(runId, started).toBeDefined();

    // 2. The approval it waits for reaches the robot, signed, as a text message naming run and node.
    const asked = await until('the approval message at the robot', () => robot.messages[0]);
    expect(asked.msgtype).toBe('text');
    const askedText = asked.body.text.content as string;
    const [, askedRun, askedNode] = /^Run (\S+) waits for approval at (\S+)\n/.exec(askedText) ?? [];
    expect({ askedRun, askedNode }).toEqual({ askedRun: runId, askedNode: 'gate' });
    expect(askedText).toContain('go?');
    expect(asked.deliveryId).toMatch(new RegExp(`^${runId}/approval:gate/[0-9a-f]{12}$`));

    // 3. The approval is given from DingTalk, by the sender the binding maps to an approver.
    const approved = replyText(await postDingtalk(server.url, 'ops-robot', message(`approve ${askedRun} ${askedNode}`, 'staff-alice'), { appSecret }));
    expect(approved).toMatch(new RegExp(`^approved gate of run ${runId} as alice@example\\.com; the run is (running|completed)$`));

    // 4. The result is delivered back to the robot.
    const result = await until('the result message at the robot', () => robot.messages[1]);
    expect(result.body).toEqual({ msgtype: 'text', text: { content: `Run ${runId} completed\n${JSON.stringify({ echoed: 'ship it' })}` } });
    expect(result.deliveryId).toMatch(new RegExp(`^${runId}/ended/[0-9a-f]{12}$`));

    // The robot accepted exactly these two messages and refused nothing (token, sign, body).
    expect(robot.rejected).toEqual([]);
    expect(robot.messages).toHaveLength(2);
    // The store agrees: both phases delivered once; the run came from the binding and was approved by alice.
    const deliveries = (await cliOk(w, ['deliveries', 'list', '--run', runId!])).deliveries;
    expect(deliveries.map((d: any) => [d.phase, d.state, d.attempts]).sort()).toEqual([
      ['approval:gate', 'delivered', 1],
      ['ended', 'delivered', 1],
    ]);
    const events = (await cliOk(w, ['trace', runId!, '--format', 'json'])).events;
    expect(events[0].correlation.origin).toMatchObject({ kind: 'trigger', source: 'dingtalk', binding: 'ops-robot@1', caller: 'dingtalk:staff-alice' });
    expect(events[0].correlation.delivery).toEqual({ kind: 'dingtalk', webhookUrl: robot.webhookUrl, secretRef: 'DT_ROBOT_SECRET', accessTokenRef: 'DT_ROBOT_TOKEN' });
    expect(events.find((e: any) => e.type === 'capability.completed' && e.payload.output?.approved !== undefined)?.payload.output).toMatchObject({ approved: true, by: 'alice@example.com' });
    const records = (await cliOk(w, ['ingress', 'list', '--binding', 'ops-robot', '--status', 'launched'])).records;
    expect(records).toEqual([expect.objectContaining({ runId, source: 'dingtalk', caller: 'dingtalk:staff-alice' })]);

    // The robot's access token reached the robot (it refused nothing) but no byte of the store:
    // the database, its WAL and every other file of the state directory.
    const files = readdirSync(w.state, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(readFileSync(join(f.parentPath ?? f.path, f.name)).includes(robot.accessToken), f.name).toBe(false);
  });
});

// Result delivery on SQLite, in one process: each phase of a run (an approval it waits for, its
// end) is queued in the commit that records it and reaches a real receiver on loopback exactly
// once however often the receiver fails first; failures are recorded, dead-lettered, and retried
// by an operator through the CLI. The receivers' logs are the oracle.
import { afterEach, describe, expect, it } from 'vitest';
import type { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { runCli } from '../helpers/cli.js';
import { DingTalkRobot } from '../helpers/dingtalk-robot.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const gate = chain('gated', [{ id: 'gate', uses: 'human.approval@1', config: { prompt: 'ship release 1.2?' } }], { requires: ['approval'] });
const quick = chain('quick', []);

async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function runtimeIn(dir: string, delivery: Record<string, unknown>): Promise<WorkflowRuntime> {
  const rt = await openRuntime({ dir, delivery: { backoffBaseMs: 1, pollMs: 20, ...delivery } });
  cleanup.push(() => rt.close());
  return rt;
}

describe('result delivery (SQLite)', () => {
  it('a webhook that fails 3 times then succeeds gets each phase (approval, end) exactly once, signed', async () => {
    const hook = await new WebhookReceiver('hook-secret-1').start();
    cleanup.push(() => hook.close());
    hook.failNext(3);
    const rt = await runtimeIn(tempDir(), { env: { HOOK_SECRET: 'hook-secret-1' } });
    const handle = await rt.launch(gate, { delivery: { kind: 'webhook', url: hook.url, secretRef: 'HOOK_SECRET' } });
    expect(await handle.settled()).toMatchObject({ status: 'paused' });
    // Queued in the commit that recorded the approval, before any sender ran.
    expect((await rt.deliveries.list({ runId: handle.runId })).map((d) => [d.phase, d.state, d.attempts])).toEqual([['approval:gate', 'pending', 0]]);

    rt.deliveries.start();
    await until('the approval delivery', () => hook.accepted.length === 1);
    await rt.approve(handle.runId, 'gate', { by: 'alice' });
    expect((await handle.result).status).toBe('completed');
    await until('the end delivery', () => hook.accepted.length === 2);
    await rt.deliveries.stop();
    expect(await rt.deliveries.drain()).toEqual({ delivered: 0, failed: 0, dead: 0, lost: 0 });

    expect(hook.failed).toBe(3);
    expect(hook.badSignatures).toEqual([]);
    expect([...hook.counts().values()]).toEqual([1, 1]);
    const [approval, ended] = hook.accepted;
    expect(approval.body).toMatchObject({ runId: handle.runId, phase: 'approval:gate', runStatus: 'paused', approval: { nodeId: 'gate', prompt: 'ship release 1.2?' } });
    expect(approval.body.approval.invocationId).toEqual(expect.any(String));
    expect(ended.body).toMatchObject({ runId: handle.runId, phase: 'ended', runStatus: 'completed', outcome: { status: 'completed' } });
    expect(ended.deliveryId).toBe(ended.body.deliveryId);
    const records = await rt.deliveries.list({ runId: handle.runId });
    expect(records.map((d) => [d.phase, d.state, d.attempts, d.lastStatusCode]).sort()).toEqual([
      ['approval:gate', 'delivered', 4, 204],
      ['ended', 'delivered', 1, 204],
    ]);
    // The failures of the first attempts stay recorded on the delivery.
    expect(records.find((d) => d.phase === 'approval:gate')!.lastError).toMatch(/^delivery\.http-status: HTTP 500/);
    expect(new Set(records.map((d) => d.id))).toEqual(new Set(hook.accepted.map((r) => r.deliveryId)));
  });

  it('a DingTalk robot that answers errcode 3 times then ok gets one signed message per phase', async () => {
    const robot = await new DingTalkRobot('tok-1', 'SECrobot-secret').start();
    cleanup.push(() => robot.close());
    robot.failNext(3);
    const rt = await runtimeIn(tempDir(), { env: { ROBOT_SECRET: 'SECrobot-secret', ROBOT_TOKEN: robot.accessToken } });
    const handle = await rt.launch(gate, { delivery: { kind: 'dingtalk', webhookUrl: robot.webhookUrl, secretRef: 'ROBOT_SECRET', accessTokenRef: 'ROBOT_TOKEN' } });
    await handle.settled();
    rt.deliveries.start();
    await until('the approval message', () => robot.messages.length === 1);
    await rt.approve(handle.runId, 'gate', { by: 'bob' });
    await handle.result;
    await until('the end message', () => robot.messages.length === 2);
    await rt.deliveries.stop();

    expect(robot.failed).toBe(3);
    expect(robot.rejected.filter((r) => r.errcode !== 130101)).toEqual([]);
    const [approval, ended] = robot.messages;
    expect(approval.msgtype).toBe('text');
    expect(approval.body.text.content).toContain(`Run ${handle.runId} waits for approval at gate`);
    expect(approval.body.text.content).toContain('ship release 1.2?');
    expect(ended.body.text.content).toContain(`Run ${handle.runId} completed`);
    const records = await rt.deliveries.list({ runId: handle.runId });
    const first = records.find((d) => d.phase === 'approval:gate')!;
    expect([first.state, first.attempts]).toEqual(['delivered', 4]);
    expect(first.lastError).toMatch(/errcode 130101/);
    expect(new Set(robot.messages.map((m) => m.deliveryId))).toEqual(new Set(records.map((d) => d.id)));
  });

  it('the robot refuses a wrong secret, and the delivery records the refusal; markdown messages are accepted', async () => {
    const robot = await new DingTalkRobot('tok-2', 'SECright').start();
    cleanup.push(() => robot.close());
    const rt = await runtimeIn(tempDir(), { maxAttempts: 2, env: { RIGHT: 'SECright', WRONG: 'SECwrong', ROBOT_TOKEN: robot.accessToken } });
    const wrong = await rt.launch(quick, { delivery: { kind: 'dingtalk', webhookUrl: robot.webhookUrl, secretRef: 'WRONG', accessTokenRef: 'ROBOT_TOKEN' } });
    const right = await rt.launch(quick, { delivery: { kind: 'dingtalk', webhookUrl: robot.webhookUrl, secretRef: 'RIGHT', accessTokenRef: 'ROBOT_TOKEN', format: 'markdown' } });
    await wrong.result;
    await right.result;
    await until('both settled', async () => {
      await rt.deliveries.drain();
      return (await rt.deliveries.list({ state: 'pending' })).length === 0;
    });
    expect(robot.messages).toHaveLength(1);
    expect(robot.messages[0].body).toMatchObject({ msgtype: 'markdown', markdown: { title: `Run ${right.runId} completed` } });
    const [dead] = await rt.deliveries.list({ state: 'dead' });
    expect(dead).toMatchObject({ runId: wrong.runId, phase: 'ended', attempts: 2, lastStatusCode: 200 });
    expect(dead.lastError).toMatch(/errcode 310000: sign not match/);
  });

  it('a permanent failure ends dead after the attempts; the CLI lists it and retries it, and it is delivered once', async () => {
    const hook = await new WebhookReceiver().start();
    cleanup.push(() => hook.close());
    hook.failAlways(503);
    const dir = tempDir();
    const rt = await runtimeIn(dir, { maxAttempts: 3 });
    const handle = await rt.launch(quick, { delivery: { kind: 'webhook', url: hook.url } });
    await handle.result;
    await until('the delivery to die', async () => (await rt.deliveries.drain()).dead === 1);
    expect(hook.failed).toBe(3);

    const listed = await runCli(['deliveries', 'list', '--status', 'dead', '--dir', dir]);
    expect(listed.code).toBe(0);
    expect(listed.out[0]).toMatchObject({ kind: 'DeliveryList', deliveries: [{ runId: handle.runId, phase: 'ended', state: 'dead', attempts: 3, lastStatusCode: 503 }] });
    const id = listed.out[0].deliveries[0].id as string;
    expect(id).toMatch(new RegExp(`^${handle.runId}/ended/[0-9a-f]{12}$`));

    hook.failAlways(undefined);
    const retried = await runCli(['deliveries', 'retry', id, '--dir', dir]);
    expect(retried.code).toBe(0);
    expect(retried.out[0]).toMatchObject({ kind: 'DeliveryRetried', delivery: { id, state: 'pending', attempts: 0 } });
    const drained = await runCli(['deliveries', 'drain', '--dir', dir]);
    expect(drained.out[0]).toMatchObject({ kind: 'DeliveriesDrained', delivered: 1, dead: 0 });
    expect([...hook.counts()]).toEqual([[id, 1]]);
    expect(await rt.deliveries.get(id)).toMatchObject({ state: 'delivered', attempts: 1 });

    // A delivered one is not retried (conflict), an unknown one is not found.
    const again = await runCli(['deliveries', 'retry', id, '--dir', dir]);
    expect([again.code, again.out[0]?.error?.code]).toEqual([8, 'delivery.not-retryable']);
    const unknown = await runCli(['deliveries', 'retry', 'no-such/ended/000000000000', '--dir', dir]);
    expect([unknown.code, unknown.out[0]?.error?.code]).toEqual([6, 'delivery.not-found']);
  }, 60_000);

  it('a 4xx refusal is dead at once; a missing secret is a recorded failure that sends nothing', async () => {
    const hook = await new WebhookReceiver('s').start();
    cleanup.push(() => hook.close());
    const rt = await runtimeIn(tempDir(), { maxAttempts: 2, env: {} });
    const refused = await rt.launch(quick, { delivery: { kind: 'webhook', url: hook.url } });
    const noSecret = await rt.launch(quick, { delivery: { kind: 'webhook', url: hook.url, secretRef: 'UNSET_SECRET' } });
    await refused.result;
    await noSecret.result;
    // Both die in one drain: the refusal at once, the secretless one after its 2 quick attempts.
    expect(await rt.deliveries.drain()).toMatchObject({ delivered: 0, failed: 1, dead: 2 });
    // The unsigned request was refused with 401: not worth another attempt.
    expect((await rt.deliveries.list({ runId: refused.runId }))[0]).toMatchObject({ state: 'dead', attempts: 1, lastStatusCode: 401 });
    const d = (await rt.deliveries.list({ runId: noSecret.runId }))[0];
    expect(d).toMatchObject({ state: 'dead', attempts: 2 });
    expect(d.lastError).toMatch(/^delivery\.secret-missing: the environment variable UNSET_SECRET/);
    expect(hook.badSignatures).toEqual(['' + (await rt.deliveries.list({ runId: refused.runId }))[0].id]);
    expect(hook.accepted).toEqual([]);
  });

  it('a queued run cancelled before it starts queues its end in the same transaction; runs without a target queue nothing', async () => {
    const dir = tempDir();
    const rt = await runtimeIn(dir, {});
    const queued = await rt.launch(quick, { executionMode: 'background', delivery: { kind: 'webhook', url: 'https://hooks.example.com/hook' } });
    await rt.cancel(queued.runId, { reason: 'not needed' });
    const plain = await rt.launch(quick);
    await plain.result;
    expect((await rt.deliveries.list()).map((d) => [d.runId, d.phase, d.runStatus, d.state])).toEqual([[queued.runId, 'ended', 'cancelled', 'pending']]);
  });

  it('each waiting approval is its own phase, queued once however many commits list it', async () => {
    const two = {
      apiVersion: 'workflow.gm-hz.dev/v1alpha1',
      kind: 'WorkflowTemplate',
      metadata: { id: 'two-gates' },
      spec: {
        nodes: [
          { id: 'start', uses: 'core.start@1' },
          { id: 'legal', uses: 'human.approval@1', config: { prompt: 'legal ok?' } },
          { id: 'finance', uses: 'human.approval@1', config: { prompt: 'finance ok?' } },
          { id: 'end', uses: 'core.end@1' },
        ],
        edges: [
          { from: 'start', to: 'legal' },
          { from: 'start', to: 'finance' },
          { from: 'legal', to: 'end' },
          { from: 'finance', to: 'end' },
        ],
        requires: ['approval'],
      },
    };
    const rt = await runtimeIn(tempDir(), {});
    const handle = await rt.launch(two, { delivery: { kind: 'webhook', url: 'https://hooks.example.com/hook' } });
    expect(await handle.settled()).toMatchObject({ status: 'paused' });
    const phases = async () => (await rt.deliveries.list({ runId: handle.runId })).map((d) => d.phase).sort();
    expect(await phases()).toEqual(['approval:finance', 'approval:legal']);
    // This commit still lists finance as waiting: it is not queued again.
    await rt.approve(handle.runId, 'legal', { by: 'erin' });
    expect(await phases()).toEqual(['approval:finance', 'approval:legal']);
    await rt.approve(handle.runId, 'finance', { by: 'erin' });
    expect((await handle.result).status).toBe('completed');
    expect(await phases()).toEqual(['approval:finance', 'approval:legal', 'ended']);
  });

  it('backs off exponentially with at most 50 % jitter, capped', async () => {
    const { backoffMs } = await import('../../dist/hosts/node/delivery/deliverer.js');
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 1000, 60_000, 0))).toEqual([1000, 2000, 4000, 8000]);
    expect(backoffMs(3, 1000, 60_000, 0.999)).toBe(Math.round(4000 * 1.4995));
    expect(backoffMs(40, 1000, 60_000, 0.5)).toBe(60_000);
  });

  it('refuses bad delivery options with typed errors', async () => {
    await expect(openRuntime({ delivery: { maxAttempts: 0 } })).rejects.toMatchObject({ code: 'delivery.bad-option' });
    await expect(openRuntime({ delivery: { sendTimeoutMs: 5000, leaseTtlMs: 4000 } })).rejects.toMatchObject({ code: 'delivery.bad-option' });
    const bad = await runCli(['run', 'x.json', '--deliver-to', 'dingtalk:not-a-url', '--dir', tempDir()]);
    expect([bad.code, bad.out[0]?.error?.code]).toEqual([2, 'launch.bad-delivery']);
  });
});

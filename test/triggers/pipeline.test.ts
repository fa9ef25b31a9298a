// Bindings and the trigger pipeline against the built host, on SQLite (a real file) and on
// PostgreSQL (a schema of its own): the binding states, the mapping checked at publish, every
// step's record in the ingress journal, and one run per event under concurrent admissions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TriggerPipeline, WorkflowRuntime, ingressRunId } from '../../dist/hosts/node/index.js';
import { pgUrl, testSchema } from '../helpers/postgres.js';
import { tempDir } from '../helpers/node-host.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { echo } from './helpers.js';

const schema = testSchema('adw_trig');
const stores: [string, () => string][] = [
  ['SQLite', () => `${tempDir('adw-trig-')}/workflow.db`],
  ['PostgreSQL', () => `${pgUrl}?schema=${schema}`],
];


async function open(store: string): Promise<WorkflowRuntime> {
  return WorkflowRuntime.open({ store, log: () => undefined, tools: { echo: (i: { text: string }) => ({ text: i.text }) } });
}

const hook = (id: string, extra: Record<string, unknown> = {}) => ({ id, source: 'webhook', config: { secretRef: 'HOOK_SECRET' }, target: 'echo@1', input: { text: { pointer: '/body/msg' } }, ...extra });

describe.each(stores)('bindings and the pipeline on %s', (name, location) => {
  let rt: WorkflowRuntime;
  let store: string;
  beforeAll(async () => {
    store = location();
    rt = await open(store);
    if ((await rt.catalog.listRevisions('echo')).length === 0) {
      const d = await rt.catalog.putDraft(echo, { expectedDraftRevision: 0 });
      await rt.catalog.publish('echo', { expectedDraftRevision: d.draftRevision });
    }
  });
  afterAll(async () => rt.close());

  it('moves a binding revision draft -> published -> disabled; the active revision is the highest published', async () => {
    const id = `b-states-${name}`;
    const r1 = await rt.bindings.put(hook(id), { by: 'alice' });
    expect(r1).toMatchObject({ id, revision: 1, state: 'draft', createdBy: 'alice', target: { id: 'echo', revision: 1 } });
    await expect(rt.bindings.active(id)).rejects.toMatchObject({ code: 'binding.not-found' });
    expect((await rt.bindings.publish(id, 1)).state).toBe('published');
    const r2 = await rt.bindings.put(hook(id, { description: 'second' }), { expectedRevision: 1 });
    expect(r2.revision).toBe(2);
    await expect(rt.bindings.put(hook(id), { expectedRevision: 1 })).rejects.toMatchObject({ code: 'binding.conflict' });
    expect((await rt.bindings.active(id)).revision).toBe(1);
    await rt.bindings.publish(id, 2);
    expect((await rt.bindings.active(id)).revision).toBe(2);
    // Revision 1's spec is as it was written: only its state moves.
    expect(await rt.bindings.get(id, 1)).toMatchObject({ revision: 1, state: 'published' });
    expect((await rt.bindings.get(id, 1)).description).toBeUndefined();
    const disabled = await rt.bindings.disable(id);
    expect(disabled.map((b) => b.state)).toEqual(['disabled', 'disabled']);
    await expect(rt.bindings.active(id)).rejects.toMatchObject({ code: 'binding.not-found' });
    await expect(rt.bindings.publish(id, 2)).rejects.toMatchObject({ code: 'binding.disabled' });
    expect((await rt.bindings.list({ id })).map((b) => `${b.revision}:${b.state}`)).toEqual(['1:disabled', '2:disabled']);
  });

  it('refuses a malformed binding at put, and a mapping that does not fit the target at publish', async () => {
    await expect(rt.bindings.put({ id: 'x', source: 'sms', config: {}, target: 'echo' })).rejects.toMatchObject({
      code: 'binding.invalid',
      detail: { errors: expect.arrayContaining([expect.objectContaining({ pointer: '/source' }), expect.objectContaining({ pointer: '/target' })]) },
    });
    const cron = (config: unknown) => rt.bindings.put({ id: 'c', source: 'cron', config, target: 'echo@1', input: { text: { literal: 'tick' } } });
    await expect(cron({ pattern: '61 * * * *' })).rejects.toMatchObject({ code: 'binding.invalid', detail: { errors: [expect.objectContaining({ pointer: '/config/pattern' })] } });
    await expect(cron({ pattern: '* * * * *', timezone: 'Mars/Olympus_Mons' })).rejects.toMatchObject({ code: 'binding.invalid', detail: { errors: [expect.objectContaining({ pointer: '/config/timezone' })] } });
    await expect(cron({ pattern: '* * * * *', misfire: { policy: 'run-all', bound: 1000 } })).rejects.toMatchObject({ code: 'binding.invalid', detail: { errors: [expect.objectContaining({ pointer: '/config/misfire/bound' })] } });
    await expect(rt.bindings.put({ id: 'd', source: 'dingtalk', config: { appSecretRef: 'X', senders: {} }, target: 'echo@1' })).rejects.toMatchObject({ code: 'binding.invalid', detail: { errors: [expect.objectContaining({ pointer: '/config/senders' })] } });
    await expect(rt.bindings.put(hook('y', { input: { text: { pointer: 'body/msg' } } }))).rejects.toMatchObject({ code: 'binding.invalid', detail: { errors: [expect.objectContaining({ pointer: '/input/text/pointer' })] } });
    const id = `b-fit-${name}`;
    await rt.bindings.put(hook(id, { input: { text: { literal: 5 } } }));
    await expect(rt.bindings.publish(id, 1)).rejects.toMatchObject({ code: 'binding.invalid', message: expect.stringContaining('/input/text/literal must be string') });
    await rt.bindings.put(hook(id, { input: { note: { literal: 'x' } } }));
    await expect(rt.bindings.publish(id, 2)).rejects.toMatchObject({ code: 'binding.invalid', message: expect.stringContaining('requires input text') });
    await rt.bindings.put(hook(id, { target: 'echo@9' }));
    await expect(rt.bindings.publish(id, 3)).rejects.toMatchObject({ code: 'binding.target-not-found' });
  });

  it('records every step: launched with the run, deduplicated with the first run, rejected with the reason', async () => {
    const id = `b-pipe-${name}`;
    await rt.bindings.put(hook(id));
    const binding = await rt.bindings.publish(id, 1);
    const pipeline = new TriggerPipeline(rt, { deployment: 'test' });
    const first = await pipeline.admit(binding, { source: 'webhook', sourceEventId: 'evt-1', caller: 'hmac:HOOK_SECRET', payload: { body: { msg: 'hello' } } });
    expect(first).toMatchObject({ deduplicated: false, runId: ingressRunId({ deployment: 'test', source: 'webhook', sourceEventId: 'evt-1', bindingId: id, bindingRevision: 1 }) });
    const again = await pipeline.admit(binding, { source: 'webhook', sourceEventId: 'evt-1', payload: { body: { msg: 'other' } } });
    expect(again).toMatchObject({ deduplicated: true, runId: first.runId });
    await expect(pipeline.admit(binding, { source: 'webhook', sourceEventId: 'evt-2', payload: { body: {} } })).rejects.toMatchObject({ code: 'trigger.mapping-failed' });
    await expect(pipeline.admit(binding, { source: 'webhook', sourceEventId: 'evt-3', payload: { body: { msg: 7 } } })).rejects.toMatchObject({ code: 'trigger.input-invalid' });
    // Another deployment is another key: the same event id makes its own run.
    const other = await new TriggerPipeline(rt, { deployment: 'staging' }).admit(binding, { source: 'webhook', sourceEventId: 'evt-1', payload: { body: { msg: 'x' } } });
    expect(other.deduplicated).toBe(false);
    expect(other.runId).not.toBe(first.runId);

    const records = await rt.triggerStorage.listIngress({ bindingId: id, limit: 100 });
    expect(records.map((r) => [r.sourceEventId, r.status, r.reasonCode ?? null, r.runId ?? null])).toEqual([
      ['evt-1', 'launched', null, first.runId],
      ['evt-1', 'deduplicated', null, first.runId],
      ['evt-2', 'rejected', 'trigger.mapping-failed', null],
      ['evt-3', 'rejected', 'trigger.input-invalid', null],
      ['evt-1', 'launched', null, other.runId],
    ]);
    expect(records[0]).toMatchObject({ deployment: 'test', bindingRevision: 1, caller: 'hmac:HOOK_SECRET' });
    // The run is queued with its origin, and a worker runs it.
    expect((await rt.store.getRun(first.runId!))?.status).toBe('queued');
    const worker = await rt.startWorker();
    try {
      expect(await rt.follow(first.runId!).result).toMatchObject({ status: 'completed', output: { echoed: 'hello' } });
    } finally {
      await worker.stop();
    }
    const accepted = (await rt.readEvents(first.runId!)).events[0];
    expect(accepted.origin.actor).toBe('trigger');
    expect(accepted.correlation.origin).toEqual({ kind: 'trigger', source: 'webhook', binding: `${id}@1`, sourceEventId: 'evt-1', caller: 'hmac:HOOK_SECRET' });
  });

  it("a triggered run carries its binding's delivery target: the queued run's result reaches the webhook, signed", async () => {
    const id = `b-delivery-${name}`;
    const receiver = await new WebhookReceiver('deliver-secret').start();
    // A runtime that reads the target's secret from its own environment.
    const drt = await WorkflowRuntime.open({ store, log: () => undefined, tools: { echo: (i: { text: string }) => ({ text: i.text }) }, delivery: { env: { DELIVER_SECRET: 'deliver-secret' }, backoffBaseMs: 1 } });
    try {
      const delivery = { kind: 'webhook', url: receiver.url, secretRef: 'DELIVER_SECRET' };
      await drt.bindings.put(hook(id, { delivery }));
      const binding = await drt.bindings.publish(id, 1);
      expect(binding.delivery).toEqual(delivery);
      const admitted = await new TriggerPipeline(drt).admit(binding, { source: 'webhook', sourceEventId: 'd-1', payload: { body: { msg: 'delivered' } } });
      expect(admitted.deduplicated).toBe(false);
      expect((await drt.store.getRun(admitted.runId!))?.status).toBe('queued');
      // This test sends the deliveries itself (drain), after the run ended.
      const worker = await drt.startWorker({ deliveries: false });
      try {
        expect(await drt.follow(admitted.runId!).result).toMatchObject({ status: 'completed', output: { echoed: 'delivered' } });
      } finally {
        await worker.stop();
      }
      expect((await drt.readEvents(admitted.runId!)).events[0].correlation.delivery).toEqual(delivery);
      expect(await drt.deliveries.drain()).toMatchObject({ delivered: 1, dead: 0 });
      expect(receiver.badSignatures).toEqual([]);
      expect(receiver.accepted.map((r) => r.body)).toEqual([
        expect.objectContaining({ runId: admitted.runId, phase: 'ended', runStatus: 'completed', outcome: expect.objectContaining({ status: 'completed', result: { echoed: 'delivered' } }) }),
      ]);
      expect((await drt.deliveries.list({ runId: admitted.runId! })).map((d) => [d.phase, d.state])).toEqual([['ended', 'delivered']]);
      // A delivery target the `delivery` launch option would refuse is refused when the binding is put.
      await expect(drt.bindings.put(hook(`${id}-bad`, { delivery: { kind: 'sms', url: 'x' } }))).rejects.toMatchObject({ code: 'binding.invalid', message: expect.stringContaining('/delivery/kind') });
      await expect(drt.bindings.put(hook(`${id}-creds`, { delivery: { kind: 'webhook', url: 'http://user:pw@127.0.0.1:9/hook' } }))).rejects.toMatchObject({ code: 'binding.invalid', message: expect.stringContaining('must not carry credentials') });
    } finally {
      await drt.close();
      await receiver.close();
    }
  });

  it('admits one event delivered 200 times at once from two runtimes exactly once', async () => {
    const id = `b-race-${name}`;
    await rt.bindings.put(hook(id));
    const binding = await rt.bindings.publish(id, 1);
    const rt2 = await open(store);
    try {
      const pipelines = [new TriggerPipeline(rt), new TriggerPipeline(rt2)];
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => pipelines[i % 2].admit(binding, { source: 'webhook', sourceEventId: 'same', payload: { body: { msg: 'once' } } })));
      const runIds = new Set(answers.map((a) => a.runId));
      expect(runIds.size).toBe(1);
      expect(answers.filter((a) => !a.deduplicated)).toHaveLength(1);
      const records = await rt.triggerStorage.listIngress({ bindingId: id, limit: 1000 });
      expect(records.filter((r) => r.status === 'launched')).toHaveLength(1);
      expect(records.filter((r) => r.status === 'deduplicated')).toHaveLength(199);
      expect((await rt.listRuns({ limit: 10_000 })).filter((r) => runIds.has(r.runId))).toHaveLength(1);
    } finally {
      await rt2.close();
    }
  });
});

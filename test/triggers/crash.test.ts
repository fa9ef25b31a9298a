// A crash between receiving an event and launching its run: `serve` is SIGKILLed by the ingress
// fault hook inside the admission's transaction (after the run and the record are written, before
// the commit) or right after the commit. On SQLite and on PostgreSQL the store then holds either
// nothing (the sender's retry launches the run) or both the `launched` record and its run (the
// retry is a duplicate, and a worker runs it).
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { pgUrl, testSchema } from '../helpers/postgres.js';
import { cliOk, echo, postHook, publishBinding, publishTemplate, serve, until, world, type World } from './helpers.js';

const secret = 'crash-secret';
const schema = testSchema('adw_trig_crash');


const stores: [string, Record<string, string>][] = [
  ['SQLite', {}],
  ['PostgreSQL', { STORE: `${pgUrl}?schema=${schema}` }],
];

describe.each(stores)('a crash while admitting a webhook event (%s)', (_name, storeEnv) => {
  let w: World;
  beforeAll(async () => {
    w = world({ HOOK_SECRET: secret, ...storeEnv });
    await publishTemplate(w, echo);
    await publishBinding(w, { id: 'hook', source: 'webhook', config: { secretRef: 'HOOK_SECRET' }, target: 'echo@1', input: { text: { pointer: '/body/text' } } });
  });

  // The adw scheme's event id is the body's digest (its x-adw-event-id is not signed).
  const ingress = async (body: string) => (await cliOk(w, ['ingress', 'list', '--binding', 'hook'])).records.filter((r: any) => r.sourceEventId === `sha256:${createHash('sha256').update(body).digest('hex')}`);
  const runs = async () => (await cliOk(w, ['runs', '--limit', '100'])).runs.map((r: any) => r.runId);

  it('killed before the commit: neither the record nor the run; the retry launches it', async () => {
    const body = JSON.stringify({ text: 'before' });
    const doomed = await serve(w, { AGENT_WORKFLOW_FAULT_INGRESS: 'kill-before-commit' });
    await expect(postHook(doomed.url, 'hook', body, { secret, eventId: 'crash-1' })).rejects.toThrow();
    expect((await doomed.done).signal).toBe('SIGKILL');
    expect(await ingress(body)).toEqual([]);
    const before = await runs();
    const server = await serve(w);
    try {
      const retry = await postHook(server.url, 'hook', body, { secret, eventId: 'crash-1' });
      expect(retry).toMatchObject({ status: 202, body: { deduplicated: false } });
      expect((await ingress(body)).map((r: any) => r.status)).toEqual(['launched']);
      expect(await runs()).toEqual(expect.arrayContaining([...before, retry.body.runId]));
      expect((await runs()).length).toBe(before.length + 1);
    } finally {
      await server.stop();
    }
  });

  it('killed after the commit: both the record and the run; the retry is a duplicate and the run completes', async () => {
    const body = JSON.stringify({ text: 'after' });
    const doomed = await serve(w, { AGENT_WORKFLOW_FAULT_INGRESS: 'kill-after-commit' });
    await expect(postHook(doomed.url, 'hook', body, { secret, eventId: 'crash-2' })).rejects.toThrow();
    expect((await doomed.done).signal).toBe('SIGKILL');
    const [record] = await ingress(body);
    expect(record).toMatchObject({ status: 'launched', runId: expect.stringMatching(/^i-/) });
    expect(await runs()).toContain(record.runId);
    const server = await serve(w);
    try {
      expect(await postHook(server.url, 'hook', body, { secret, eventId: 'crash-2' })).toEqual({ status: 202, body: { runId: record.runId, deduplicated: true } });
      const view = await until('the run to complete', async () => {
        const v = await cliOk(w, ['runs', '--limit', '100']);
        return v.runs.find((r: any) => r.runId === record.runId && r.status === 'completed');
      });
      expect(view.status).toBe('completed');
    } finally {
      await server.stop();
    }
  });
});

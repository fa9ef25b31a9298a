// Result delivery on PostgreSQL: the same outbox contract as on SQLite, queued by the schema's
// trigger in the transaction of the commit (inline runs, queued runs, a queued run cancelled),
// claimed with SKIP LOCKED, dead-lettered and retried. The receiver's log is the oracle.
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, openRuntime } from '../helpers/node-host.js';
import { assertPostgresReachable, pgUrl } from '../helpers/postgres.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const gate = chain('gated', [{ id: 'gate', uses: 'human.approval@1', config: { prompt: 'merge?' } }], { requires: ['approval'] });
const quick = chain('quick', []);
const schema = `deliv_pg_${process.pid}`;
const store = `${pgUrl}?schema=${schema}`;

async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function dropSchema(): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

const cleanup: (() => Promise<void>)[] = [];
beforeAll(async () => {
  await assertPostgresReachable();
  await dropSchema();
});
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});
afterAll(dropSchema);

async function runtime(delivery: Record<string, unknown>): Promise<WorkflowRuntime> {
  const rt = await openRuntime({ store, delivery: { backoffBaseMs: 1, pollMs: 20, ...delivery } });
  cleanup.push(() => rt.close());
  return rt;
}

describe('result delivery (PostgreSQL)', () => {
  it('a webhook that fails 3 times then succeeds gets each phase of an inline run exactly once', async () => {
    const hook = await new WebhookReceiver('pg-secret').start();
    cleanup.push(() => hook.close());
    hook.failNext(3);
    const rt = await runtime({ env: { HOOK_SECRET: 'pg-secret' } });
    const handle = await rt.launch(gate, { delivery: { kind: 'webhook', url: hook.url, secretRef: 'HOOK_SECRET' } });
    await handle.settled();
    expect((await rt.deliveries.list({ runId: handle.runId })).map((d) => [d.phase, d.state])).toEqual([['approval:gate', 'pending']]);
    rt.deliveries.start();
    await until('the approval delivery', () => hook.accepted.length === 1);
    await rt.approve(handle.runId, 'gate', { by: 'dave' });
    await handle.result;
    await until('the end delivery', () => hook.accepted.length === 2);
    await rt.deliveries.stop();
    expect(await rt.deliveries.drain()).toEqual({ delivered: 0, failed: 0, dead: 0, lost: 0 });
    expect(hook.failed).toBe(3);
    expect(hook.badSignatures).toEqual([]);
    expect(hook.accepted.map((r) => r.body.phase)).toEqual(['approval:gate', 'ended']);
    expect([...hook.counts().values()]).toEqual([1, 1]);
    expect((await rt.deliveries.list({ runId: handle.runId })).map((d) => [d.phase, d.state, d.attempts, d.lastStatusCode]).sort()).toEqual([
      ['approval:gate', 'delivered', 4, 204],
      ['ended', 'delivered', 1, 204],
    ]);
  });

  it('queued runs keep their target: a worker-run one and a cancelled one each queue their end; dead ones are retried', async () => {
    const hook = await new WebhookReceiver().start();
    cleanup.push(() => hook.close());
    hook.failAlways(500);
    const rt = await runtime({ maxAttempts: 2 });
    const ran = await rt.launch(quick, { executionMode: 'background', delivery: { kind: 'webhook', url: hook.url } });
    const cancelled = await rt.launch(quick, { executionMode: 'background', delivery: { kind: 'webhook', url: hook.url } });
    await rt.cancel(cancelled.runId, { reason: 'not today' });
    const worker = await rt.startWorker({ deliveries: false });
    try {
      expect((await ran.result).status).toBe('completed');
    } finally {
      await worker.stop();
    }
    expect(await rt.deliveries.drain()).toMatchObject({ delivered: 0, dead: 2 });
    const dead = await rt.deliveries.list({ state: 'dead' });
    expect(dead.map((d) => [d.runId, d.runStatus, d.attempts, d.lastStatusCode]).sort()).toEqual(
      [
        [ran.runId, 'completed', 2, 500],
        [cancelled.runId, 'cancelled', 2, 500],
      ].sort(),
    );
    hook.failAlways(undefined);
    for (const d of dead) expect(await rt.deliveries.retry(d.id)).toMatchObject({ state: 'pending', attempts: 0 });
    expect(await rt.deliveries.drain()).toMatchObject({ delivered: 2 });
    expect(new Set(hook.accepted.map((r) => r.deliveryId))).toEqual(new Set(dead.map((d) => d.id)));
    expect(hook.accepted).toHaveLength(2);
    await expect(rt.deliveries.retry(dead[0].id)).rejects.toMatchObject({ code: 'delivery.not-retryable' });
    await expect(rt.deliveries.get('nope/ended/000000000000')).rejects.toMatchObject({ code: 'delivery.not-found' });
  });
});

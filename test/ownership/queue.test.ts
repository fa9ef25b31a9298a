// The durable queue on both stores: concurrency keys (FIFO, a limit that holds across workers),
// cancelling a waiting run, why a run waits, idempotent launches.
import { Client } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { tempDir } from '../helpers/node-host.js';
import { template } from './helpers.js';

const pgBase = 'postgres://postgres@127.0.0.1:5432/test';
const schemas: string[] = [];

afterAll(async () => {
  if (schemas.length === 0) return;
  const c = new Client({ connectionString: pgBase });
  await c.connect();
  for (const s of schemas) await c.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await c.end();
});

const stores = {
  sqlite: () => `${tempDir('adw-queue-')}/workflow.db`,
  postgres: () => {
    const schema = `q_${process.pid}_${schemas.length}_${Date.now() % 1_000_000}`;
    schemas.push(schema);
    return `${pgBase}?schema=${schema}`;
  },
};

const turn = template('turn', [{ id: 'reply', uses: 'tool.call@1', config: { tool: 'reply' }, inputs: { conversation: { source: 'input', path: '/conversation' }, n: { source: 'input', path: '/n' } } }], [
  ['start', 'reply'],
  ['reply', 'end'],
], { requires: ['tool:reply'], outputs: { said: { source: 'output', nodeId: 'reply' } } });

describe.each(Object.keys(stores) as (keyof typeof stores)[])('the queue on %s', (kind) => {
  it('runs at most N turns of one conversation at once, in FIFO order, across two workers; a waiting run can be cancelled', async () => {
    const store = stores[kind]();
    const active = new Map<string, number>();
    let overlap = 0;
    const started: string[] = [];
    const reply = async (input: { conversation: string; n: number }) => {
      const now = (active.get(input.conversation) ?? 0) + 1;
      active.set(input.conversation, now);
      if (input.conversation === 'c1' && now > 1) overlap += 1;
      if (input.conversation === 'c2' && now > 2) overlap += 1;
      started.push(`${input.conversation}:${input.n}`);
      await new Promise((r) => setTimeout(r, 30));
      active.set(input.conversation, (active.get(input.conversation) ?? 1) - 1);
      return { n: input.n };
    };
    const open = () => WorkflowRuntime.open({ store, log: () => undefined, pollMs: 20, tools: { reply } });
    const producer = await open();
    const [w1, w2] = [await open(), await open()];
    try {
      const launched: { runId: string; conversation: string; n: number }[] = [];
      for (let n = 0; n < 6; n++) {
        for (const [conversation, limit] of [
          ['c1', 1],
          ['c2', 2],
        ] as const) {
          const h = await producer.launch(turn, { input: { conversation, n }, concurrencyKey: conversation, concurrencyLimit: limit });
          launched.push({ runId: h.runId, conversation, n });
        }
      }
      // Nothing runs before a worker does; `runs` says why each one waits.
      const waiting = await producer.getRun(launched[0].runId);
      expect(waiting).toMatchObject({ status: 'queued', waitReason: expect.stringContaining('worker') });
      // The last turn of c1 is cancelled while it waits: it never starts.
      const cancelled = launched.filter((l) => l.conversation === 'c1').at(-1)!;
      expect(await producer.cancel(cancelled.runId, { reason: 'user left', by: 'test' })).toMatchObject({ status: 'cancelled' });

      const workers = [await w1.startWorker({ idlePollMs: 10 }), await w2.startWorker({ idlePollMs: 10 })];
      for (const l of launched) {
        const outcome = await producer.follow(l.runId).result;
        expect(outcome.status).toBe(l === cancelled ? 'cancelled' : 'completed');
      }
      await Promise.all(workers.map((w) => w.stop()));
      expect(overlap).toBe(0);
      // One conversation at a time runs its turns in the order they were queued.
      const c1 = started.filter((s) => s.startsWith('c1:'));
      expect(c1).toEqual(['c1:0', 'c1:1', 'c1:2', 'c1:3', 'c1:4']);
      expect(started.filter((s) => s.startsWith('c2:'))).toHaveLength(6);
      expect(workers[0].stats.started + workers[1].stats.started).toBe(11);
    } finally {
      await Promise.all([producer.close(), w1.close(), w2.close()]);
    }
  }, 60_000);

  it('queued runs cost no store reads until their result is asked for', async () => {
    const store = stores[kind]();
    const rt = await WorkflowRuntime.open({ store, log: () => undefined, pollMs: 20, tools: { reply: (i: { n: number }) => ({ n: i.n }) } });
    const journal = (rt as any).store;
    const getRun = journal.getRun.bind(journal);
    let reads = 0;
    journal.getRun = (runId: string) => (reads++, getRun(runId));
    try {
      const handles = [];
      for (let n = 0; n < 50; n++) handles.push(await rt.launch(turn, { input: { conversation: `c${n}`, n }, executionMode: 'background' }));
      reads = 0;
      // Ten poll intervals with nobody waiting and no worker: the queued runs are not followed.
      await new Promise((r) => setTimeout(r, 200));
      expect(reads).toBe(0);
      const worker = await rt.startWorker({ idlePollMs: 10 });
      const outcomes = await Promise.all(handles.map((h) => h.result));
      await worker.stop();
      expect(outcomes.map((o) => o.status)).toEqual(handles.map(() => 'completed'));
      expect(reads).toBeGreaterThan(0);
    } finally {
      await rt.close();
    }
  }, 60_000);

  it('an idempotency key makes one run of any number of launches, queued or not', async () => {
    const store = stores[kind]();
    const calls: number[] = [];
    const rt = await WorkflowRuntime.open({ store, log: () => undefined, tools: { reply: (i: { n: number }) => (calls.push(i.n), { n: i.n }) } });
    try {
      const first = await rt.launch(turn, { input: { conversation: 'x', n: 1 }, idempotencyKey: 'order-42' });
      const again = await rt.launch(turn, { input: { conversation: 'x', n: 2 }, idempotencyKey: 'order-42' });
      expect(again.runId).toBe(first.runId);
      expect(await again.result).toMatchObject({ status: 'completed', output: { said: { n: 1 } } });
      const q1 = await rt.launch(turn, { input: { conversation: 'y', n: 3 }, idempotencyKey: 'order-43', executionMode: 'background' });
      const q2 = await rt.launch(turn, { input: { conversation: 'y', n: 4 }, idempotencyKey: 'order-43', executionMode: 'background' });
      expect(q2.runId).toBe(q1.runId);
      const worker = await rt.startWorker({ idlePollMs: 10 });
      expect(await q1.result).toMatchObject({ status: 'completed', output: { said: { n: 3 } } });
      await worker.stop();
      expect(calls).toEqual([1, 3]);
    } finally {
      await rt.close();
    }
  }, 60_000);

  it('a worker holds at most maxRuns runs, claimed or started, and fails a queued run the engine refuses to start', async () => {
    const store = stores[kind]();
    const strict = { ...turn, metadata: { id: 'strict' }, spec: { ...turn.spec, inputSchema: { type: 'object', required: ['conversation', 'n'], properties: { n: { type: 'integer' } } } } };
    const rt = await WorkflowRuntime.open({ store, log: () => undefined, pollMs: 20, tools: { reply: async (i: { n: number }) => (await new Promise((r) => setTimeout(r, 5)), { n: i.n }) } });
    try {
      const handles = [];
      for (let n = 0; n < 60; n++) handles.push(await rt.launch(strict, { input: { conversation: 'z', n }, executionMode: 'background' }));
      const refused = await rt.launch(strict, { input: { conversation: 'z', n: 'not a number' }, executionMode: 'background' });
      const worker = await rt.startWorker({ maxRuns: 8, idlePollMs: 5 });
      let most = 0;
      const sampling = (async () => {
        for (;;) {
          const runs = await rt.listRuns({ limit: 1000 });
          const held = runs.filter((r) => r.lease?.owner === rt.ownerId && (r.status === 'queued' || r.status === 'running')).length;
          most = Math.max(most, held);
          if (runs.every((r) => r.status !== 'queued' && r.status !== 'running')) return;
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      for (const h of handles) expect((await h.result).status).toBe('completed');
      expect(await refused.result).toMatchObject({ status: 'failed', error: { code: 'run.input-invalid' } });
      await sampling;
      await worker.stop();
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(8);
    } finally {
      await rt.close();
    }
  }, 60_000);
});

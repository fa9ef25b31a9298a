// A run executed by a worker process on PostgreSQL, followed from this process through the store:
// two subscribers (one with a tiny buffer) see every committed event once and in order.
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { assertPostgresReachable, pgUrl as pgBase } from '../helpers/postgres.js';
import { jsonLines, liveWorld, startCli, template, until } from './helpers.js';

const schema = `live_follow_${process.pid}_${Date.now() % 1_000_000}`;
const store = `${pgBase}?schema=${schema}`;

afterAll(async () => {
  const c = new pg.Client({ connectionString: pgBase });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await c.end();
});

const sweep = template('pg-sweep', [{ id: 'each', uses: 'core.foreach@1', config: { maxConcurrency: 4, body: { uses: 'tool.call@1', config: { tool: 'echo' } } }, inputs: { items: { source: 'input', path: '/items' } } }], [
  ['start', 'each'],
  ['each', 'end'],
], { requires: ['tool:echo'] });

describe('runtime.live on PostgreSQL', () => {
  it('follows a run that another process executes', async () => {
    await assertPostgresReachable();
    const w = liveWorld();
    const rt = await WorkflowRuntime.open({ store, dir: join(w.dir, 'follower'), log: () => undefined, pollMs: 50 });
    const worker = startCli(w, ['serve', '--store', store]);
    try {
      await until('the worker to serve', () => jsonLines(worker.out()).some((l) => l.kind === 'Serving'));
      const items = Array.from({ length: 300 }, (_, i) => i);
      const handle = await rt.launch(sweep, { input: { items }, executionMode: 'background' });
      const read = async (bufferEventsMax?: number) => {
        const seqs: number[] = [];
        let gaps = 0;
        for await (const item of rt.live(handle.runId, bufferEventsMax ? { bufferEventsMax } : {})) {
          if (item.kind === 'gap') gaps++;
          else if (item.kind === 'progress') throw new Error('a progress item in a run whose tools report no progress');
          else {
            seqs.push(item.seq);
            if (bufferEventsMax) await new Promise((r) => setImmediate(r));
          }
        }
        return { seqs, gaps };
      };
      const [a, b] = await Promise.all([read(), read(2)]);
      const outcome = await rt.getRun(handle.runId);
      expect(outcome.status).toBe('completed');
      const journal = (await rt.readEvents(handle.runId, { limit: 10_000 })).events.map((e) => e.seq);
      expect(journal.length).toBeGreaterThan(1000);
      expect(a.seqs).toEqual(journal);
      expect(b.seqs).toEqual(journal);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.done;
      await rt.close();
    }
  }, 120_000);

  it('is woken by NOTIFY on commit, not by polling: a follower that would poll every 10 minutes sees the run as it goes', async () => {
    await assertPostgresReachable();
    const w = liveWorld();
    // Its run records would be read only every 10 minutes: every event it gets was notified.
    const rt = await WorkflowRuntime.open({ store, dir: join(w.dir, 'follower'), log: () => undefined, pollMs: 600_000 });
    const launcher = await WorkflowRuntime.open({ store, dir: join(w.dir, 'launcher'), log: () => undefined });
    const worker = startCli(w, ['serve', '--store', store]);
    try {
      await until('the worker to serve', () => jsonLines(worker.out()).some((l) => l.kind === 'Serving'));
      const handle = await launcher.launch(sweep, { input: { items: Array.from({ length: 50 }, (_, i) => i) }, executionMode: 'background' });
      const seqs: number[] = [];
      for await (const item of rt.live(handle.runId)) if (item.kind === 'event') seqs.push(item.seq);
      const journal = (await rt.readEvents(handle.runId, { limit: 10_000 })).events;
      expect(journal.at(-1)!.seq).toBe(seqs.at(-1));
      expect(seqs).toEqual(journal.map((e) => e.seq));
      expect(journal.some((e) => e.type === 'run.completed')).toBe(true);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.done;
      await launcher.close();
      await rt.close();
    }
  }, 60_000);
});

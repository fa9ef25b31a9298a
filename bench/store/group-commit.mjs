#!/usr/bin/env node
// Store-level throughput of two-step runs with several workers over one store: each worker claims
// a batch of queued runs, then makes the three ordered commits of a 2-step run (start, request,
// completion + lease release) as one group commit per step. The engine is not involved: this is
// the ceiling the store puts on the product. Prints a table; never fails.
//
//   node bench/store/group-commit.mjs [--runs 4000] [--workers 4] [--batch 32] [--pg postgres://…]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { SqliteJournalStore } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { PostgresJournalStore } from '../../dist/hosts/node/stores/pg/journal.js';

const arg = (name, dflt) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] : dflt);
const runs = Number(arg('runs', 4000));
const workers = Number(arg('workers', 4));
const batch = Number(arg('batch', 32));
const pgUrl = arg('pg', process.env.AGENT_WORKFLOW_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test');
const plan = Buffer.from(JSON.stringify({ plan: 'x'.repeat(2000) }));
const body = (seq) => JSON.stringify({ seq, type: 'node.event', data: 'y'.repeat(560) });
const lines = (from, n) => Buffer.from(Array.from({ length: n }, (_, i) => body(from + i)).join('\n'));

async function measure(name, openStore, cleanup) {
  const stores = [];
  for (let i = 0; i < workers; i++) stores.push(await openStore());
  const now = Date.now();
  for (let i = 0; i < runs; i++) await stores[0].ownership.enqueue({ runId: `r${i}`, plan, templateKey: 'wf@1', input: {}, authority: {} }, now + i);
  let commits = 0;
  const t0 = performance.now();
  await Promise.all(
    stores.map(async (store, w) => {
      const owner = `bench-${w}`;
      for (;;) {
        const claimed = await store.ownership.claim(owner, batch, 60_000, Date.now());
        if (claimed.length === 0) return;
        const lease = (c) => ({ owner, epoch: c.epoch });
        await store.commit(claimed.map((c) => ({ runId: c.runId, expectedSeq: 0, lastSeq: 2, events: lines(1, 2), plan, status: 'running', lease: lease(c) })));
        await store.commit(claimed.map((c) => ({ runId: c.runId, expectedSeq: 2, lastSeq: 3, events: lines(3, 1), status: 'running', lease: lease(c) })));
        await store.commit(claimed.map((c) => ({ runId: c.runId, expectedSeq: 3, lastSeq: 6, events: lines(4, 3), status: 'completed', lease: lease(c), releaseLease: true, checkpoint: Buffer.from('{"cp":1}'), outcome: { result: { ok: true } } })));
        commits += 3;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const done = (await stores[0].listRuns({ statuses: ['completed'], limit: runs + 1 })).length;
  for (const s of stores) await s.close();
  await cleanup();
  return { store: name, runs: done, 'runs/s': Math.round(done / seconds), 'group commits/s': Math.round(commits / seconds), seconds: seconds.toFixed(2) };
}

const rows = [];
const dir = mkdtempSync(join(tmpdir(), 'bench-store-'));
try {
  rows.push(await measure('sqlite (synchronous=FULL)', async () => SqliteJournalStore.open(join(dir, 'bench.db')), async () => {}));
} catch (err) {
  rows.push({ store: 'sqlite', error: err.message });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const schema = `bench_${Math.random().toString(36).slice(2, 8)}`;
try {
  rows.push(
    await measure('postgresql', async () => PostgresJournalStore.open(pgUrl, { schema, poolSize: 4 }), async () => {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`DROP SCHEMA "${schema}" CASCADE`);
      await c.end();
    }),
  );
} catch (err) {
  rows.push({ store: 'postgresql', error: err.message });
}
console.log(`${runs} two-step runs, ${workers} workers, claims and group commits of ${batch}`);
console.table(rows);

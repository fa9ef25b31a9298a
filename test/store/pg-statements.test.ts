// The statements the PostgreSQL store sends for its two hot paths, counted where every one of them
// passes, the `pg` client, outside the store. A group commit is one statement when every entry
// holds against the rows it finds, the locked transaction (BEGIN, lock the rows, write, COMMIT)
// when one does not or when a check needs this machine (a lease held by an owner whose process may
// be gone). A claim is one statement beside the question of which owners are dead, the locked
// transaction when a queued run with a concurrency key could be admitted.
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PostgresJournalStore } from '../../dist/hosts/node/stores/pg/journal.js';
import { readBootId } from '../../dist/hosts/shared/process-identity.js';
import type { CommitEntry } from '../../hosts/core/store.js';
import { pgUrl, testSchema } from '../helpers/postgres.js';

const schema = testSchema('t_pg_statements');
const plan = Buffer.from('{"plan":"p"}');
const hour = 3_600_000;

function entry(runId: string, expectedSeq: number, count: number, extra: Partial<CommitEntry> = {}): CommitEntry {
  const events = Buffer.from(Array.from({ length: count }, (_, i) => JSON.stringify({ seq: expectedSeq + 1 + i, type: 'e' })).join('\n'));
  return { runId, expectedSeq, lastSeq: expectedSeq + count, events, status: 'running', ...(expectedSeq === 0 ? { plan } : {}), ...extra };
}

/** The SQL text of every statement the store sends while `fn` runs. */
async function statementsOf(fn: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const query = pg.Client.prototype.query;
  const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const q = args[0] as string | { text: string };
    sent.push(typeof q === 'string' ? q : q.text);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as never);
  try {
    await fn();
  } finally {
    spy.mockRestore();
  }
  return sent;
}

/** The owner id of a process of this machine that has exited. */
function goneOwner(): string {
  const host = hostname().replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64);
  const child = spawnSync(process.execPath, ['-e', 'console.log(require("fs").readFileSync("/proc/self/stat","utf8"))'], { encoding: 'utf8' });
  const fields = child.stdout.slice(child.stdout.lastIndexOf(')') + 2).split(' ');
  return [host, String(child.pid), fields[19], readBootId()!.slice(0, 8), `${Math.random().toString(16).slice(2, 10)}`].join('/');
}

const launch = (runId: string, extra: Record<string, unknown> = {}) => ({ runId, plan, templateKey: 'wf@1', input: { runId }, authority: {} as never, ...extra });

let store: PostgresJournalStore;
beforeAll(async () => {
  store = await PostgresJournalStore.open(pgUrl, { schema, poolSize: 4 });
});
afterAll(async () => {
  await store?.close();
  // The claim cases open stores of their own, one schema each.
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  for (const suffix of ['claim', 'keyed', 'dead']) await client.query(`DROP SCHEMA IF EXISTS ${schema}_${suffix} CASCADE`);
  await client.end();
});

describe('PostgreSQL group commit', () => {
  it('commits a group whose entries all hold in one statement: new runs, later seqs, leases, a queued run started', async () => {
    await store.ownership.enqueue({ runId: 'queued1', plan, templateKey: 'wf@1', input: {}, authority: {} as never }, Date.now());
    const [claimed] = await store.ownership.claim('w1', 1, hour, Date.now());
    expect(claimed).toMatchObject({ runId: 'queued1', kind: 'start' });
    expect(await store.commit([entry('one1', 0, 2), entry('one2', 0, 1, { lease: { owner: 'w1', epoch: 1, expiresAt: Date.now() + hour } })])).toEqual([]);
    const sent = await statementsOf(async () => {
      expect(
        await store.commit([
          entry('one1', 2, 3),
          entry('one2', 1, 1, { lease: { owner: 'w1', epoch: 1 } }),
          entry('one2', 2, 2, { lease: { owner: 'w1', epoch: 1 }, status: 'completed', releaseLease: true }),
          entry('queued1', 0, 2, { lease: { owner: 'w1', epoch: claimed.epoch } }),
          entry('one3', 0, 1),
        ]),
      ).toEqual([]);
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toContain('FOR UPDATE');
    expect(await store.getRun('one1')).toMatchObject({ lastSeq: 5, status: 'running' });
    expect(await store.getRun('one2')).toMatchObject({ lastSeq: 4, status: 'completed' });
    expect((await store.getRun('one2'))!.lease).toEqual({ epoch: 1 });
    expect(await store.getRun('queued1')).toMatchObject({ lastSeq: 2, lease: { owner: 'w1', epoch: claimed.epoch } });
    // The queued run keeps the plan it was enqueued with; its journal starts at seq 1.
    expect(Buffer.from((await store.load('queued1'))!.plan).toString()).toBe(plan.toString());
    expect((await store.readEvents('queued1', 0, 10)).events.map((e) => JSON.parse(e).seq)).toEqual([1, 2]);
    expect((await store.readEvents('one1', 0, 10)).events.map((e) => JSON.parse(e).seq)).toEqual([1, 2, 3, 4, 5]);
  });

  it('writes nothing in that statement when one entry does not hold; the locked transaction then commits the others', async () => {
    expect(await store.commit([entry('two1', 0, 1), entry('two2', 0, 1)])).toEqual([]);
    const sent = await statementsOf(async () => {
      expect(await store.commit([entry('two1', 1, 1), entry('two2', 5, 1), entry('two3', 0, 1)])).toMatchObject([{ runId: 'two2', code: 'store.conflict' }]);
    });
    expect(sent.map((t) => t.trim().split(/\s+/)[0])).toEqual(['WITH', 'BEGIN', 'SELECT', 'WITH', 'COMMIT']);
    expect(await store.getRun('two1')).toMatchObject({ lastSeq: 2 });
    expect(await store.getRun('two2')).toMatchObject({ lastSeq: 1 });
    expect(await store.getRun('two3')).toMatchObject({ lastSeq: 1 });
  });

  it('commits an entry without a lease over a lease whose process is gone (asked of this machine), and fences it over a live one', async () => {
    const gone = goneOwner();
    expect(await store.commit([entry('dead1', 0, 1, { lease: { owner: gone, epoch: 1, expiresAt: Date.now() + hour } })])).toEqual([]);
    expect(await store.commit([entry('live1', 0, 1, { lease: { owner: 'w-live', epoch: 1, expiresAt: Date.now() + hour } })])).toEqual([]);
    expect(await store.commit([entry('live1', 1, 1)])).toMatchObject([{ runId: 'live1', code: 'store.fenced' }]);
    expect(await store.commit([entry('dead1', 1, 1)])).toEqual([]);
    expect(await store.getRun('dead1')).toMatchObject({ lastSeq: 2 });
    expect(await store.getRun('live1')).toMatchObject({ lastSeq: 1 });
  });
});

describe('PostgreSQL claim', () => {
  it('claims takeovers, then queued runs oldest first, in one statement beside the dead-owner query', async () => {
    const claimer = await PostgresJournalStore.open(pgUrl, { schema: `${schema}_claim`, poolSize: 4 });
    try {
      const t0 = Date.now();
      // A running run whose lease expired, three queued runs (queued out of id order).
      expect(await claimer.commit([entry('c-run', 0, 1, { lease: { owner: 'w-old', epoch: 1, expiresAt: t0 - 1000 } })])).toEqual([]);
      for (const [id, at] of [['c-q2', 2], ['c-q1', 1], ['c-q3', 3]] as const) await claimer.ownership.enqueue(launch(id), t0 + at);
      let claimed: Awaited<ReturnType<typeof claimer.ownership.claim>> = [];
      const sent = await statementsOf(async () => {
        claimed = await claimer.ownership.claim('w1', 3, hour, t0 + 10);
      });
      expect(claimed.map((c) => [c.runId, c.kind, c.epoch])).toEqual([['c-run', 'takeover', 2], ['c-q1', 'start', 1], ['c-q2', 'start', 1]]);
      expect(sent.map((t) => t.trim().split(/\s+/).slice(0, 2).join(' ')).sort()).toEqual(['SELECT DISTINCT', 'WITH k']);
      expect(await claimer.getRun('c-q3')).toMatchObject({ status: 'queued' });
      expect(await claimer.getRun('c-run')).toMatchObject({ lease: { owner: 'w1', epoch: 2 } });
    } finally {
      await claimer.close();
    }
  });

  it('leaves a queued run with a concurrency key that could start to the locked claim, which admits it', async () => {
    const claimer = await PostgresJournalStore.open(pgUrl, { schema: `${schema}_keyed`, poolSize: 4 });
    try {
      const t0 = Date.now();
      await claimer.ownership.enqueue(launch('k-free'), t0 + 2);
      await claimer.ownership.enqueue(launch('k-keyed', { concurrencyKey: 'conv', concurrencyLimit: 1 }), t0 + 1);
      let claimed: Awaited<ReturnType<typeof claimer.ownership.claim>> = [];
      const sent = await statementsOf(async () => {
        claimed = await claimer.ownership.claim('w1', 4, hour, t0 + 10);
      });
      expect(claimed.map((c) => c.runId)).toEqual(['k-keyed', 'k-free']);
      expect(sent).toContain('BEGIN');
      expect(sent.some((t) => t.includes('pg_advisory_xact_lock'))).toBe(true);
    } finally {
      await claimer.close();
    }
  });

  it('takes over a run whose owner died on this machine in the same claim that first learns it', async () => {
    const claimer = await PostgresJournalStore.open(pgUrl, { schema: `${schema}_dead`, poolSize: 4 });
    try {
      const gone = goneOwner();
      expect(await claimer.commit([entry('d-run', 0, 1, { lease: { owner: gone, epoch: 4, expiresAt: Date.now() + hour } })])).toEqual([]);
      expect(await claimer.commit([entry('d-live', 0, 1, { lease: { owner: 'w-live', epoch: 1, expiresAt: Date.now() + hour } })])).toEqual([]);
      const claimed = await claimer.ownership.claim('w2', 4, hour, Date.now());
      expect(claimed).toEqual([{ runId: 'd-run', epoch: 5, kind: 'takeover' }]);
    } finally {
      await claimer.close();
    }
  });
});

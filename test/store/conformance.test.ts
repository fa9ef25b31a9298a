// The store contract, run unchanged against every store that implements `RunOwnership`:
// SQLite (a real file) and PostgreSQL (a fresh schema per case). Each case is a script of calls
// and the whole answer expected from each.
//
// PostgreSQL: `AGENT_WORKFLOW_TEST_PG` (default postgres://postgres@127.0.0.1:5432/test). When
// it is unreachable the PostgreSQL cases fail; they are never skipped.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteJournalStore } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { pgMigrations } from '../../dist/hosts/node/stores/pg/migrations.js';
import { checkpointInlineMax, migrations } from '../../dist/hosts/node/stores/sqlite/migrations.js';
import { PostgresJournalStore } from '../../dist/hosts/node/stores/pg/journal.js';
import type { ClaimedRun, QueuedLaunch, RunOwnership } from '../../hosts/core/ownership-store.js';
import { assertPostgresReachable, pgUrl } from '../helpers/postgres.js';
import type { CommitEntry, JournalStore } from '../../hosts/core/store.js';
import type { RunProjection } from '../../hosts/core/types.js';

type Store = JournalStore & { readonly ownership: RunOwnership };

interface Harness {
  name: string;
  /** Fresh, empty storage for one case; `open` opens another instance (own connections) on it. */
  fresh(): Promise<{ open(): Promise<Store> }>;
  cleanup(): Promise<void>;
}


function sqliteHarness(): Harness {
  const dir = mkdtempSync(join(tmpdir(), 'store-conformance-'));
  let n = 0;
  return {
    name: 'sqlite',
    async fresh() {
      const file = join(dir, `case-${++n}.db`);
      return { open: async () => SqliteJournalStore.open(file) as unknown as Store };
    },
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresHarness(): Harness {
  const prefix = `t_conf_${Math.random().toString(36).slice(2, 10)}`;
  const schemas: string[] = [];
  return {
    name: 'postgres',
    async fresh() {
      const schema = `${prefix}_${schemas.length + 1}`;
      schemas.push(schema);
      return { open: async () => (await PostgresJournalStore.open(pgUrl, { schema, poolSize: 4 })) as unknown as Store };
    },
    async cleanup() {
      if (schemas.length === 0) return;
      await withClient(async (client) => {
        for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
      });
    },
  };
}

const plan = Buffer.from('{"plan":"p"}');
const hour = 3_600_000;

/** `count` event lines with seq `from ..`. */
function events(from: number, count: number): Buffer {
  return Buffer.from(Array.from({ length: count }, (_, i) => JSON.stringify({ seq: from + i, type: 'e' })).join('\n'));
}

function entry(runId: string, expectedSeq: number, count: number, extra: Partial<CommitEntry> = {}): CommitEntry {
  return { runId, expectedSeq, lastSeq: expectedSeq + count, events: events(expectedSeq + 1, count), status: 'running', ...(expectedSeq === 0 ? { plan } : {}), ...extra };
}

function launch(runId: string, extra: Partial<QueuedLaunch> = {}): QueuedLaunch {
  return { runId, plan, templateKey: 'wf@1', input: { n: runId }, authority: {} as QueuedLaunch['authority'], ...extra };
}

const harnesses = [sqliteHarness(), postgresHarness()];

describe.each(harnesses)('store conformance: $name', (harness) => {
  const opened: Store[] = [];
  async function freshStore(): Promise<Store> {
    const storage = await harness.fresh();
    const store = await storage.open();
    opened.push(store);
    return store;
  }
  async function freshStores(count: number): Promise<Store[]> {
    const storage = await harness.fresh();
    const stores: Store[] = [];
    for (let i = 0; i < count; i++) stores.push(await storage.open());
    opened.push(...stores);
    return stores;
  }

  beforeAll(async () => {
    if (harness.name === 'postgres') await assertPostgresReachable();
  });
  afterAll(async () => {
    for (const s of opened) await s.close();
    await harness.cleanup();
  });

  it('commits, loads and pages through events', async () => {
    const store = await freshStore();
    expect(await store.commit([entry('r1', 0, 3)])).toEqual([]);
    expect(await store.commit([entry('r1', 3, 2)])).toEqual([]);
    const tail = await store.load('r1');
    expect(tail).toBeDefined();
    expect(Buffer.from(tail!.plan).toString()).toBe(plan.toString());
    expect(tail!.checkpoint).toBeUndefined();
    expect(tail!.lastSeq).toBe(5);
    expect(Buffer.from(tail!.events).toString()).toBe(events(1, 5).toString());
    expect(await store.readEvents('r1', 0, 2)).toEqual({ events: events(1, 2).toString().split('\n'), lastSeq: 2, more: true });
    expect(await store.readEvents('r1', 2, 2)).toEqual({ events: events(3, 2).toString().split('\n'), lastSeq: 4, more: true });
    expect(await store.readEvents('r1', 4, 2)).toEqual({ events: events(5, 1).toString().split('\n'), lastSeq: 5, more: false });
    expect(await store.readEvents('r1', 5, 2)).toEqual({ events: [], lastSeq: 5, more: false });
    expect(await store.load('nope')).toBeUndefined();
    const run = await store.getRun('r1');
    expect(run).toMatchObject({ runId: 'r1', status: 'running', lastSeq: 5, lease: { epoch: 0 } });
    expect(run!.lease!.owner).toBeUndefined();
  });

  it('loads a run from its latest checkpoint and the events after it', async () => {
    const store = await freshStore();
    await store.commit([entry('r1', 0, 3)]);
    await store.commit([entry('r1', 3, 2, { checkpoint: Buffer.from('{"cp":5}') })]);
    let tail = await store.load('r1');
    expect(Buffer.from(tail!.checkpoint!).toString()).toBe('{"cp":5}');
    expect(tail!.lastSeq).toBe(5);
    expect(Buffer.from(tail!.events).toString()).toBe('');
    await store.commit([entry('r1', 5, 2)]);
    tail = await store.load('r1');
    expect(Buffer.from(tail!.checkpoint!).toString()).toBe('{"cp":5}');
    expect(Buffer.from(tail!.events).toString()).toBe(events(6, 2).toString());
    // A first commit with a checkpoint.
    await store.commit([entry('r2', 0, 2, { checkpoint: Buffer.from('{"cp":2}') })]);
    tail = await store.load('r2');
    expect(Buffer.from(tail!.events).toString()).toBe('');
  });

  it('refuses an entry whose expectedSeq differs, and a first commit without the plan', async () => {
    const store = await freshStore();
    await store.commit([entry('r1', 0, 2)]);
    expect(await store.commit([entry('r1', 1, 1)])).toEqual([{ runId: 'r1', code: 'store.conflict', message: 'run r1: expected last seq 1, the store has 2' }]);
    expect(await store.commit([{ ...entry('r2', 0, 1), plan: undefined }])).toEqual([{ runId: 'r2', code: 'store.conflict', message: 'run r2: expected last seq 0, the store has no such run' }]);
    expect(await store.commit([{ ...entry('r1', 2, 1), plan }])).toMatchObject([{ runId: 'r1', code: 'store.conflict' }]);
    expect(await store.commit([entry('r3', 2, 1)])).toMatchObject([{ runId: 'r3', code: 'store.conflict' }]);
    expect((await store.getRun('r1'))!.lastSeq).toBe(2);
    expect(await store.getRun('r2')).toBeUndefined();
    expect((await store.readEvents('r1', 0, 10)).events).toHaveLength(2);
  });

  it('commits a group in one call: a rejected entry leaves the others committed', async () => {
    const store = await freshStore();
    await store.commit([entry('a', 0, 1), entry('b', 0, 1)]);
    const rejected = await store.commit([entry('a', 1, 2), entry('b', 7, 1), entry('c', 0, 3), entry('a', 3, 1)]);
    expect(rejected).toMatchObject([{ runId: 'b', code: 'store.conflict' }]);
    expect(rejected).toHaveLength(1);
    expect((await store.getRun('a'))!.lastSeq).toBe(4);
    expect((await store.getRun('b'))!.lastSeq).toBe(1);
    expect((await store.getRun('c'))!.lastSeq).toBe(3);
    expect(Buffer.from((await store.load('a'))!.events).toString()).toBe(events(1, 4).toString());
  });

  it('lets exactly one of two processes commit the same seq of a run, new or not; the journal holds the winner\'s events only', async () => {
    const [one, two] = await freshStores(2);
    const written = (writer: string, from: number, count: number): Buffer =>
      Buffer.from(Array.from({ length: count }, (_, i) => JSON.stringify({ seq: from + i, type: 'e', writer })).join('\n'));
    for (let i = 0; i < 12; i++) {
      const runId = `race${i}`;
      // Both create the run, then both append seq 3..4 to it.
      for (const [expectedSeq, count] of [[0, 2], [2, 2]] as const) {
        const answers = await Promise.all(
          [one, two].map((store, w) => store.commit([{ ...entry(runId, expectedSeq, count), events: written(`w${w}`, expectedSeq + 1, count) }])),
        );
        const winners = answers.map((a, w) => (a.length === 0 ? `w${w}` : undefined)).filter((w) => w !== undefined);
        expect(winners).toHaveLength(1);
        expect(answers.flat()).toMatchObject([{ runId, code: 'store.conflict' }]);
        const tail = Buffer.from((await one.load(runId))!.events).toString().split('\n').slice(expectedSeq);
        expect(tail).toEqual(written(winners[0]!, expectedSeq + 1, count).toString().split('\n'));
      }
      expect((await two.getRun(runId))!.lastSeq).toBe(4);
    }
  });

  it('fails the whole commit with store.corrupt when an entry carries the wrong number of events', async () => {
    const store = await freshStore();
    await expect(async () => store.commit([entry('ok', 0, 1), { ...entry('bad', 0, 2), lastSeq: 3 }])).rejects.toMatchObject({ code: 'store.corrupt' });
    expect(await store.getRun('ok')).toBeUndefined();
  });

  it('fences a commit staged under a stale epoch after another owner took the expired lease', async () => {
    const store = await freshStore();
    const t0 = Date.now() - 10_000;
    expect(await store.commit([entry('r1', 0, 1, { lease: { owner: 'a', epoch: 1, expiresAt: t0 + 1000 } })])).toEqual([]);
    expect((await store.getRun('r1'))!.lease).toEqual({ owner: 'a', epoch: 1, expiresAt: t0 + 1000 });
    expect(await store.ownership.acquireLease('r1', 'b', hour, t0 + 5000)).toEqual({ ok: true, epoch: 2, previousEpoch: 1, previousOwner: 'a' });
    expect(await store.commit([entry('r1', 1, 1, { lease: { owner: 'a', epoch: 1 } })])).toEqual([
      { runId: 'r1', code: 'store.fenced', message: 'run r1: the commit was staged under lease epoch 1 of a, but the run\'s lease is epoch 2 held by b' },
    ]);
    expect(await store.commit([entry('r1', 1, 1, { lease: { owner: 'a', epoch: 2 } })])).toMatchObject([{ code: 'store.fenced' }]);
    expect(await store.commit([entry('r1', 1, 1, { lease: { owner: 'b', epoch: 2 } })])).toEqual([]);
    expect((await store.getRun('r1'))!.lastSeq).toBe(2);
  });

  it('fences a stale owner before comparing seqs: after the new owner committed, the old one is told it lost the run, not a seq conflict', async () => {
    // The old owner's outcomes then go to the run's inbox (a fenced writer hands them over); a seq
    // conflict made it drop them (docs/durability.md, "Late receipts").
    const store = await freshStore();
    const t0 = Date.now() - 10_000;
    expect(await store.commit([entry('r1', 0, 1, { lease: { owner: 'a', epoch: 1, expiresAt: t0 + 1000 } })])).toEqual([]);
    expect(await store.ownership.acquireLease('r1', 'b', hour, t0 + 5000)).toMatchObject({ ok: true, epoch: 2 });
    expect(await store.commit([entry('r1', 1, 2, { lease: { owner: 'b', epoch: 2 } })])).toEqual([]);
    expect(await store.commit([entry('r1', 1, 1, { lease: { owner: 'a', epoch: 1 } })])).toEqual([
      { runId: 'r1', code: 'store.fenced', message: 'run r1: the commit was staged under lease epoch 1 of a, but the run\'s lease is epoch 2 held by b' },
    ]);
    // The live owner with a stale seq still gets the seq conflict.
    expect(await store.commit([entry('r1', 1, 1, { lease: { owner: 'b', epoch: 2 } })])).toMatchObject([{ runId: 'r1', code: 'store.conflict' }]);
    expect((await store.getRun('r1'))!.lastSeq).toBe(3);
  });

  it('refuses an entry without a lease while a live lease exists, and accepts it once the lease is released', async () => {
    const store = await freshStore();
    await store.commit([entry('r1', 0, 1)]);
    const grant = await store.ownership.acquireLease('r1', 'a', hour, Date.now());
    expect(grant).toEqual({ ok: true, epoch: 1, previousEpoch: 0 });
    expect(await store.commit([entry('r1', 1, 1)])).toMatchObject([{ runId: 'r1', code: 'store.fenced' }]);
    await store.ownership.releaseLease('r1', 'a', 1);
    expect(await store.commit([entry('r1', 1, 1)])).toEqual([]);
    // An expired lease does not fence an entry without a lease either.
    await store.ownership.acquireLease('r1', 'a', 1, Date.now() - hour);
    expect(await store.commit([entry('r1', 2, 1)])).toEqual([]);
  });

  it('acquires a lease that is free, expired or its own, and not one held by someone else', async () => {
    const store = await freshStore();
    const own = store.ownership;
    const t0 = 1_000_000;
    await store.commit([entry('r1', 0, 1)]);
    expect(await own.acquireLease('missing', 'a', 1000, t0)).toMatchObject({ ok: false, code: 'run.not-found' });
    expect(await own.acquireLease('r1', 'a', 1000, t0)).toEqual({ ok: true, epoch: 1, previousEpoch: 0 });
    expect(await own.acquireLease('r1', 'b', 1000, t0 + 500)).toEqual({
      ok: false,
      code: 'lease.held',
      holder: { owner: 'a', epoch: 1, expiresAt: t0 + 1000 },
      message: 'run r1 is owned by a (lease epoch 1, expires in 500 ms)',
    });
    expect(await own.acquireLease('r1', 'a', 1000, t0 + 600)).toEqual({ ok: true, epoch: 1, previousEpoch: 1, previousOwner: 'a' });
    expect((await store.getRun('r1'))!.lease).toEqual({ owner: 'a', epoch: 1, expiresAt: t0 + 1600 });
    expect(await own.acquireLease('r1', 'b', 1000, t0 + 1600)).toMatchObject({ ok: false, code: 'lease.held' });
    expect(await own.acquireLease('r1', 'b', 1000, t0 + 1601)).toEqual({ ok: true, epoch: 2, previousEpoch: 1, previousOwner: 'a' });
    await store.commit([entry('r1', 1, 1, { status: 'completed', lease: { owner: 'b', epoch: 2 }, releaseLease: true })]);
    expect(await own.acquireLease('r1', 'c', 1000, t0)).toMatchObject({ ok: false, code: 'run.terminal' });
  });

  it('renews leases and reports the ones taken over', async () => {
    const store = await freshStore();
    const own = store.ownership;
    const t0 = 1_000_000;
    for (const id of ['r1', 'r2', 'r3']) {
      await store.commit([entry(id, 0, 1)]);
      await own.acquireLease(id, 'a', 1000, t0);
    }
    expect(await own.acquireLease('r2', 'b', 1000, t0 + 2000)).toMatchObject({ ok: true, epoch: 2 });
    await own.releaseLease('r3', 'a', 1);
    const lost = await own.renewLeases('a', new Map([['r1', 1], ['r2', 1], ['r3', 1], ['missing', 1]]), 5000, t0 + 2000);
    expect([...lost].sort()).toEqual(['missing', 'r2', 'r3']);
    expect((await store.getRun('r1'))!.lease).toEqual({ owner: 'a', epoch: 1, expiresAt: t0 + 7000 });
    expect((await store.getRun('r2'))!.lease).toEqual({ owner: 'b', epoch: 2, expiresAt: t0 + 3000 });
    expect(await own.renewLeases('a', new Map(), 5000, t0)).toEqual([]);
    // Releasing with a stale epoch is a no-op.
    await own.releaseLease('r2', 'b', 1);
    expect((await store.getRun('r2'))!.lease!.owner).toBe('b');
  });

  it('releases the lease in the commit that says so', async () => {
    const store = await freshStore();
    const now = Date.now();
    await store.commit([entry('r1', 0, 1, { lease: { owner: 'a', epoch: 1, expiresAt: now + hour } })]);
    expect(await store.commit([entry('r1', 1, 1, { status: 'paused', lease: { owner: 'a', epoch: 1 }, releaseLease: true })])).toEqual([]);
    expect((await store.getRun('r1'))!.lease).toEqual({ epoch: 1 });
    // A first commit that releases at once leaves the lease free with its epoch.
    await store.commit([entry('r2', 0, 1, { status: 'completed', lease: { owner: 'a', epoch: 3, expiresAt: now + hour }, releaseLease: true })]);
    expect((await store.getRun('r2'))!.lease).toEqual({ epoch: 3 });
    // The lease is gone: a commit under it is fenced.
    expect(await store.commit([entry('r1', 2, 1, { lease: { owner: 'a', epoch: 1 } })])).toMatchObject([{ code: 'store.fenced' }]);
  });

  it('keeps an inbox per run: pending in order, applied by the commit, refused with an error', async () => {
    const store = await freshStore();
    const own = store.ownership;
    const now = Date.now();
    await store.commit([entry('r1', 0, 1, { lease: { owner: 'a', epoch: 1, expiresAt: now + hour } }), entry('r2', 0, 1)]);
    await expect(async () => own.postCommand('missing', { type: 'resume', by: 'op' }, now)).rejects.toMatchObject({ code: 'store.not-found' });
    const c1 = await own.postCommand('r1', { type: 'approve', nodeId: 'n', invocationId: 'i', approved: true, by: 'op' }, now);
    const c2 = await own.postCommand('r2', { type: 'resume', by: 'op' }, now + 1);
    const c3 = await own.postCommand('r1', { type: 'cancel', reason: 'why', by: 'op' }, now + 2);
    expect(c1 < c2 && c2 < c3).toBe(true);
    expect(await own.pendingCommands(['r1', 'r2'], 10)).toEqual([
      { id: c1, runId: 'r1', command: { type: 'approve', nodeId: 'n', invocationId: 'i', approved: true, by: 'op' }, postedAt: now },
      { id: c2, runId: 'r2', command: { type: 'resume', by: 'op' }, postedAt: now + 1 },
      { id: c3, runId: 'r1', command: { type: 'cancel', reason: 'why', by: 'op' }, postedAt: now + 2 },
    ]);
    expect((await own.pendingCommands(['r1', 'r2'], 2)).map((c) => c.id)).toEqual([c1, c2]);
    expect(await own.pendingCommands([], 10)).toEqual([]);
    expect(await own.commandResult(c1)).toEqual({ id: c1, runId: 'r1', state: 'pending' });

    expect(await store.commit([entry('r1', 1, 1, { lease: { owner: 'a', epoch: 1 }, appliedCommands: [c1] })])).toEqual([]);
    expect(await own.commandResult(c1)).toMatchObject({ id: c1, runId: 'r1', state: 'applied', appliedBy: 'a' });
    // A fenced commit applies nothing.
    expect(await store.commit([entry('r1', 2, 1, { lease: { owner: 'z', epoch: 1 }, appliedCommands: [c3] })])).toMatchObject([{ code: 'store.fenced' }]);
    expect(await own.commandResult(c3)).toEqual({ id: c3, runId: 'r1', state: 'pending' });

    await own.refuseCommands([{ id: c3, error: { code: 'command.refused', message: 'no' } }], 'a', now + 5);
    expect(await own.commandResult(c3)).toEqual({ id: c3, runId: 'r1', state: 'refused', appliedAt: now + 5, appliedBy: 'a', error: { code: 'command.refused', message: 'no' } });
    expect((await own.pendingCommands(['r1', 'r2'], 10)).map((c) => c.id)).toEqual([c2]);
    expect(await own.commandResult(999_999)).toBeUndefined();
  });

  it('stores a command posted to a run that has ended as refused with run.terminal', async () => {
    const store = await freshStore();
    const own = store.ownership;
    const now = Date.now();
    await store.commit([entry('r1', 0, 1), entry('r2', 0, 1)]);
    await store.commit([entry('r1', 1, 1, { status: 'cancelled' })]);
    const late = await own.postCommand('r1', { type: 'late-outcome', invocationId: 'i', ok: true, output: { charged: 1 }, by: 'w' } as never, now);
    expect(await own.commandResult(late)).toEqual({
      id: late,
      runId: 'r1',
      state: 'refused',
      appliedAt: now,
      error: { code: 'run.terminal', message: 'run r1 is cancelled; it had ended when the command was posted' },
    });
    const live = await own.postCommand('r2', { type: 'resume', by: 'op' }, now + 1);
    expect(live).toBeGreaterThan(late);
    expect((await own.pendingCommands(['r1', 'r2'], 10)).map((c) => c.id)).toEqual([live]);
    // A command that was pending when its run ended is refused by whoever settles it; an applied one stays applied.
    await own.refuseCommands([{ id: live, error: { code: 'run.terminal', message: 'ended' } }], 'b', now + 2);
    await own.refuseCommands([{ id: live, error: { code: 'other', message: 'again' } }], 'c', now + 3);
    expect(await own.commandResult(live)).toMatchObject({ state: 'refused', appliedBy: 'b', error: { code: 'run.terminal' } });
  });

  it('enqueues a run once per idempotency key; a queued run has no journal and says why it waits', async () => {
    const store = await freshStore();
    const own = store.ownership;
    const now = Date.now();
    expect(await own.enqueue(launch('q1', { idempotencyKey: 'k1', concurrencyKey: 'ck', concurrencyLimit: 2 }), now)).toEqual({ runId: 'q1', created: true });
    expect(await own.enqueue(launch('q2', { idempotencyKey: 'k1' }), now)).toEqual({ runId: 'q1', created: false });
    expect(await own.enqueue(launch('q1'), now)).toEqual({ runId: 'q1', created: false });
    expect(await store.getRun('q2')).toBeUndefined();
    expect(await store.load('q1')).toBeUndefined();
    const queued = await own.queuedLaunch('q1');
    expect({ ...queued, plan: Buffer.from(queued!.plan).toString() }).toEqual({
      runId: 'q1', plan: plan.toString(), templateKey: 'wf@1', input: { n: 'q1' }, authority: {}, concurrencyKey: 'ck', concurrencyLimit: 2,
      // When it was queued (the store's now at enqueue): the run's `run.queued` event says it.
      queuedAt: now,
    });
    expect(await own.queuedLaunch('missing')).toBeUndefined();
    expect(await store.getRun('q1')).toMatchObject({ runId: 'q1', status: 'queued', lastSeq: 0, concurrencyKey: 'ck', waitReason: 'waiting for a worker (agent-workflow serve)' });
    await expect(async () => own.enqueue(launch('bad id'), now)).rejects.toMatchObject({ code: 'store.bad-id' });
  });

  it('claims queued runs in FIFO order, at most one active per key by default', async () => {
    const store = await freshStore();
    const own = store.ownership;
    const now = Date.now();
    for (let i = 1; i <= 3; i++) await own.enqueue(launch(`k${i}`, { concurrencyKey: 'key' }), now + i);
    await own.enqueue(launch('free'), now + 10);
    const first = await own.claim('w1', 10, hour, now + 20);
    expect(first.map((c) => [c.runId, c.kind, c.epoch])).toEqual([['k1', 'start', 1], ['free', 'start', 1]]);
    expect(first[0].launch).toMatchObject({ runId: 'k1', templateKey: 'wf@1', concurrencyKey: 'key', concurrencyLimit: 1 });
    expect(await own.claim('w2', 10, hour, now + 21)).toEqual([]);
    expect((await store.getRun('k2'))!.waitReason).toBe('concurrency key key: 1 of 1 active');
    expect((await store.getRun('k1'))!.waitReason).toBe('starting: claimed by w1');
    // k1 starts, then ends: its slot frees and k2 (not k3) is next.
    await store.commit([entry('k1', 0, 1, { lease: { owner: 'w1', epoch: 1 } })]);
    expect(await own.claim('w2', 10, hour, now + 22)).toEqual([]);
    await store.commit([entry('k1', 1, 1, { status: 'completed', lease: { owner: 'w1', epoch: 1 }, releaseLease: true })]);
    expect((await own.claim('w2', 10, hour, now + 23)).map((c) => c.runId)).toEqual(['k2']);
  });

  it('claims up to the concurrency limit of a key (2), oldest first, and honours the claim limit', async () => {
    const store = await freshStore();
    const own = store.ownership;
    const now = Date.now();
    for (let i = 1; i <= 4; i++) await own.enqueue(launch(`k${i}`, { concurrencyKey: 'key', concurrencyLimit: 2 }), now + i);
    expect((await own.claim('w1', 1, hour, now + 10)).map((c) => c.runId)).toEqual(['k1']);
    expect((await own.claim('w2', 10, hour, now + 10)).map((c) => c.runId)).toEqual(['k2']);
    expect(await own.claim('w3', 10, hour, now + 10)).toEqual([]);
    expect(await own.claim('w3', 0, hour, now + 10)).toEqual([]);
    await store.commit([entry('k1', 0, 1, { status: 'completed', lease: { owner: 'w1', epoch: 1 }, releaseLease: true })]);
    expect((await own.claim('w3', 10, hour, now + 11)).map((c) => c.runId)).toEqual(['k3']);
  });

  it('takes over runs whose lease expired, and paused runs with commands waiting', async () => {
    const store = await freshStore();
    const own = store.ownership;
    const t0 = Date.now() - hour;
    await store.commit([
      entry('expired', 0, 1, { lease: { owner: 'a', epoch: 1, expiresAt: t0 + 1000 } }),
      entry('live', 0, 1, { lease: { owner: 'a', epoch: 1, expiresAt: t0 + 2 * hour } }),
      entry('paused', 0, 1, { status: 'paused', lease: { owner: 'a', epoch: 1, expiresAt: t0 + 2 * hour }, releaseLease: true }),
      entry('idle', 0, 1, { status: 'paused', lease: { owner: 'a', epoch: 1, expiresAt: t0 + 2 * hour }, releaseLease: true }),
      entry('done', 0, 1, { status: 'completed' }),
    ]);
    const now = t0 + 5000;
    expect((await own.claim('w', 10, 1000, now)).map((c) => [c.runId, c.kind, c.epoch])).toEqual([['expired', 'takeover', 2]]);
    await own.postCommand('paused', { type: 'resume', by: 'op' }, now);
    expect((await own.claim('w', 10, 1000, now)).map((c) => [c.runId, c.kind, c.epoch])).toEqual([['paused', 'takeover', 2]]);
    expect(await own.claim('w', 10, 1000, now)).toEqual([]);
    // The taken-over run: the old owner is fenced, the new one commits.
    expect(await store.commit([entry('expired', 1, 1, { lease: { owner: 'a', epoch: 1 } })])).toMatchObject([{ code: 'store.fenced' }]);
    expect(await store.commit([entry('expired', 1, 1, { lease: { owner: 'w', epoch: 2 } })])).toEqual([]);
  });

  it('claims a run a timer wakes', async () => {
    const store = await freshStore();
    const now = Date.now();
    await store.commit([entry('sleeping', 0, 1, { status: 'paused', outcome: { pausedReason: 'waiting' as const, wakeAt: now + 1000 } })]);
    expect(await store.ownership.claim('w', 10, 1000, now)).toEqual([]);
    expect((await store.ownership.claim('w', 10, 1000, now + 1000)).map((c) => [c.runId, c.kind])).toEqual([['sleeping', 'takeover']]);
  });

  it('re-claims a claimed run that never started, as a start, once its lease expired', async () => {
    const store = await freshStore();
    const own = store.ownership;
    const now = Date.now();
    await own.enqueue(launch('q', { concurrencyKey: 'key' }), now);
    expect((await own.claim('w1', 10, 1000, now)).map((c) => [c.runId, c.kind, c.epoch])).toEqual([['q', 'start', 1]]);
    expect(await own.claim('w2', 10, 1000, now + 1000)).toEqual([]);
    const again = await own.claim('w2', 10, 1000, now + 1001);
    expect(again.map((c) => [c.runId, c.kind, c.epoch])).toEqual([['q', 'start', 2]]);
    expect(again[0].launch!.runId).toBe('q');
    // The first claimer is fenced; the second starts the run with the plan.
    expect(await store.commit([entry('q', 0, 1, { lease: { owner: 'w1', epoch: 1 } })])).toMatchObject([{ code: 'store.fenced' }]);
    expect(await store.commit([entry('q', 0, 1, { lease: { owner: 'w2', epoch: 2 } })])).toEqual([]);
    expect(await store.getRun('q')).toMatchObject({ status: 'running', lastSeq: 1, lease: { owner: 'w2', epoch: 2 } });
    expect((await store.load('q'))!.lastSeq).toBe(1);
  });

  it('cancels a queued run that never started, unless a worker holds it', async () => {
    const store = await freshStore();
    const own = store.ownership;
    const now = Date.now();
    await own.enqueue(launch('q1'), now);
    await own.enqueue(launch('q2'), now + 1);
    expect(await own.cancelQueued('q1', 'not needed', 'op', now + 2)).toBe(true);
    expect(await store.getRun('q1')).toMatchObject({ status: 'cancelled', outcome: { error: { code: 'run.cancelled', message: 'op cancelled the run before it started: not needed' } } });
    expect(await own.cancelQueued('q1', 'again', 'op', now + 3)).toBe(false);
    expect((await own.claim('w', 10, hour, now + 3)).map((c) => c.runId)).toEqual(['q2']);
    expect(await own.cancelQueued('q2', 'late', 'op', now + 4)).toBe(false);
    expect(await own.cancelQueued('missing', 'x', 'op', now)).toBe(false);
  });

  it('records worker presence', async () => {
    const store = await freshStore();
    const own = store.ownership;
    await own.heartbeatWorker({ owner: 'w1', startedAt: 100, heartbeatAt: 1000, info: 'host-a' });
    await own.heartbeatWorker({ owner: 'w2', startedAt: 200, heartbeatAt: 500 });
    await own.heartbeatWorker({ owner: 'w1', startedAt: 999, heartbeatAt: 2000, info: 'host-a v2' });
    expect(await own.liveWorkers(2100, 1000)).toEqual([{ owner: 'w1', startedAt: 100, heartbeatAt: 2000, info: 'host-a v2' }]);
    expect(await own.liveWorkers(2100, 5000)).toEqual([
      { owner: 'w1', startedAt: 100, heartbeatAt: 2000, info: 'host-a v2' },
      { owner: 'w2', startedAt: 200, heartbeatAt: 500 },
    ]);
    await own.removeWorker('w1');
    expect((await own.liveWorkers(2100, 5000)).map((w) => w.owner)).toEqual(['w2']);
  });

  it('keeps the outcome projection of the last commit and lists runs newest first', async () => {
    const store = await freshStore();
    const outcome: RunProjection = { pausedReason: 'approval', wakeAt: 12345, result: { text: 'a\u0000b', list: [1, 2.5, 'x'], nested: { z: 1, a: 2 } } };
    await store.commit([entry('r1', 0, 1, { status: 'paused', outcome })]);
    expect((await store.getRun('r1'))!.outcome).toEqual(outcome);
    const failed = { error: { code: 'node.failed', message: 'boom', detail: { at: 'n1' } } };
    await store.commit([entry('r1', 1, 1, { status: 'failed', outcome: failed })]);
    expect((await store.getRun('r1'))!.outcome).toEqual(failed);
    await new Promise((r) => setTimeout(r, 5));
    await store.commit([entry('r2', 0, 1)]);
    expect((await store.getRun('r2'))!.outcome).toBeUndefined();
    expect((await store.listRuns()).map((r) => r.runId)).toEqual(['r2', 'r1']);
    expect((await store.listRuns({ statuses: ['failed'] })).map((r) => [r.runId, r.status])).toEqual([['r1', 'failed']]);
    expect((await store.listRuns({ limit: 1 })).map((r) => r.runId)).toEqual(['r2']);
    expect(await store.listRuns({ statuses: ['nothing'] })).toEqual([]);
  });

  it('keeps a whole projection, and a derived one only for a run committed without one and not moved on since', async () => {
    const store = await freshStore();
    const waiting: RunProjection = {
      status: 'paused',
      pausedReason: 'approval',
      approvals: [{ nodeId: 'ask', invocationId: 'iv-1', attempt: 1, approvers: ['ops'], prompt: 'ship?' }],
      calls: [{ invocationId: 'iv-1', nodeId: 'ask', attempt: 1, kind: 'approval', name: 'ask', effect: 'idempotent', requestedSeq: 3 }],
      attention: [{ nodeId: 'each', item: 2 }],
    };
    await store.commit([entry('r1', 0, 3, { status: 'paused', outcome: waiting })]);
    expect((await store.getRun('r1'))!.outcome).toEqual(waiting);
    // A run recorded without a projection keeps the derived one, once, at the seq it was derived at.
    await store.commit([entry('old', 0, 2, { status: 'paused' })]);
    expect(store.keepProjection).toBeTypeOf('function');
    await store.keepProjection!('old', 1, waiting);
    expect((await store.getRun('old'))!.outcome).toBeUndefined();
    await store.keepProjection!('old', 2, waiting);
    expect((await store.getRun('old'))!.outcome).toEqual(waiting);
    await store.keepProjection!('old', 2, { status: 'paused' });
    expect((await store.getRun('old'))!.outcome).toEqual(waiting);
  });

  it('stores artifacts once under their digest and verifies them', async () => {
    const store = await freshStore();
    const bytes = Buffer.from('payload \u0000 bytes');
    const ref = await store.putArtifact!(bytes, 'text/plain');
    expect(ref).toEqual({ digest: 'sha256:' + (await import('node:crypto')).createHash('sha256').update(bytes).digest('hex'), size: bytes.length });
    expect(await store.putArtifact!(bytes, 'text/plain')).toEqual(ref);
    const got = await store.getArtifact!(ref.digest);
    expect({ ...got, bytes: Buffer.from(got!.bytes).toString() }).toEqual({ ...ref, mediaType: 'text/plain', bytes: bytes.toString() });
    expect(await store.getArtifact!(`sha256:${'0'.repeat(64)}`)).toBeUndefined();
    await expect(async () => store.getArtifact!('md5:x')).rejects.toMatchObject({ code: 'store.bad-id' });
  });

  it('never lets 4 parallel claimers take one run twice, nor exceed a key limit across them', async () => {
    const stores = await freshStores(4);
    const now = Date.now();
    // 100 runs without a key, 100 runs over 10 keys with limit 2 (claimed runs never start here,
    // so exactly the 2 oldest runs of each key may be claimed).
    for (let i = 0; i < 200; i++) {
      const id = `q${String(i).padStart(3, '0')}`;
      await stores[0].ownership.enqueue(launch(id, i % 2 === 0 ? {} : { concurrencyKey: `key${i % 20}`, concurrencyLimit: 2 }), now + i);
    }
    const claims: ClaimedRun[][] = [[], [], [], []];
    await Promise.all(
      stores.map(async (store, w) => {
        for (let idle = 0; idle < 3; ) {
          const got = await store.ownership.claim(`w${w}`, 7, hour, now + 1000);
          claims[w].push(...got);
          idle = got.length === 0 ? idle + 1 : 0;
        }
      }),
    );
    const all = claims.flat().map((c) => c.runId);
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe(120);
    for (let k = 1; k < 20; k += 2) {
      const ofKey = Array.from({ length: 200 }, (_, i) => i).filter((i) => i % 20 === k).map((i) => `q${String(i).padStart(3, '0')}`);
      expect(all.filter((id) => ofKey.includes(id)).sort()).toEqual(ofKey.slice(0, 2));
    }
    expect(claims.flat().every((c) => c.kind === 'start' && c.epoch === 1)).toBe(true);
  });
});

/** Runs `fn` with a connection of its own to the test server, closed after. */
async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A fresh schema of the store as an earlier program left it: the migrations up to `version` applied. */
async function storeAtVersion(client: pg.Client, schema: string, version: number): Promise<void> {
  await client.query(`CREATE SCHEMA "${schema}"`);
  await client.query(`CREATE TABLE "${schema}".schema_migrations (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  for (const m of pgMigrations.filter((m: { version: number }) => m.version <= version)) {
    await client.query(m.up(`"${schema}"`));
    await client.query(`INSERT INTO "${schema}".schema_migrations (version, description) VALUES ($1, $2)`, [m.version, m.description]);
  }
}

/** Drops a test's schema once its tests are done. */
function dropSchemaAfterAll(schema: string): void {
  afterAll(async () => {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect().catch(() => {});
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await client.end().catch(() => {});
  });
}

describe('PostgreSQL store: migrations', () => {
  const schema = `t_mig_${Math.random().toString(36).slice(2, 10)}`;
  dropSchemaAfterAll(schema);

  it('migrates once when several processes open at the same time, and refuses a newer schema', async () => {
    await assertPostgresReachable();
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresJournalStore.open(pgUrl, { schema, poolSize: 1 })));
    await Promise.all(stores.map((s) => s.close()));
    await withClient(async (client) => {
      const { rows } = await client.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
      // The same numbered versions as the SQLite store's migrations, each applied once.
      expect(rows.map((r) => r.version)).toEqual(migrations.map((m) => m.version));
      expect(pgMigrations.map((m) => m.version)).toEqual(migrations.map((m) => m.version));
      expect(pgMigrations.map((m) => m.version)).toEqual(Array.from({ length: pgMigrations.length }, (_, i) => i + 1));
      await client.query(`INSERT INTO "${schema}".schema_migrations (version, description) VALUES (99, 'from the future')`);
    });
    await expect(PostgresJournalStore.open(pgUrl, { schema })).rejects.toMatchObject({ code: 'store.schema-too-new' });
    await expect(PostgresJournalStore.open(pgUrl, { schema: 'Bad-Name' })).rejects.toMatchObject({ code: 'store.bad-id' });
  });
});

describe('PostgreSQL store: version 5 (whole projections)', () => {
  const schema = `t_v5_${Math.random().toString(36).slice(2, 10)}`;
  dropSchemaAfterAll(schema);

  it('clears the outcome of a run that can still change (derived again from its journal) and keeps a terminal one', async () => {
    await assertPostgresReachable();
    await withClient(async (client) => {
      // A store at version 4, as an earlier program left it.
      await storeAtVersion(client, schema, 4);
      const insert = `INSERT INTO "${schema}".runs (run_id, status, last_seq, plan, created_at, updated_at, outcome) VALUES ($1, $2, 1, '\\x7b7d', 1, 1, $3::json)`;
      await client.query(insert, ['paused-1', 'paused', JSON.stringify({ pausedReason: 'approval' })]);
      await client.query(insert, ['done-1', 'completed', JSON.stringify({ result: { n: 1 } })]);
    });
    const store = await PostgresJournalStore.open(pgUrl, { schema, poolSize: 1 });
    try {
      expect((await store.getRun('paused-1'))!.outcome).toBeUndefined();
      expect((await store.getRun('done-1'))!.outcome).toEqual({ result: { n: 1 } });
    } finally {
      await store.close();
    }
  });
});

describe('PostgreSQL store: version 10 (large checkpoints in their own table)', () => {
  const schema = `t_v10_${Math.random().toString(36).slice(2, 10)}`;
  dropSchemaAfterAll(schema);

  const large = (at: number) => Buffer.from(JSON.stringify({ at, state: 'x'.repeat(checkpointInlineMax) }));

  it("moves each large checkpoint out of its run's row, keeps the small ones, and the runs load from them after the upgrade", async () => {
    await assertPostgresReachable();
    await withClient(async (client) => {
      // A store at version 9, as an earlier program left it: runs with a large and a small
      // checkpoint at seq 2 and an event after it, one without a checkpoint.
      await storeAtVersion(client, schema, 9);
      const run = `INSERT INTO "${schema}".runs (run_id, status, last_seq, checkpoint_seq, checkpoint, plan, created_at, updated_at) VALUES ($1, 'running', 3, $2, $3, '\\x7b7d', 1, 1)`;
      await client.query(run, ['large-cp', 2, large(2)]);
      await client.query(run, ['small-cp', 2, Buffer.from('{"at":2}')]);
      await client.query(run, ['no-cp', 0, null]);
      for (const id of ['large-cp', 'small-cp', 'no-cp']) {
        for (const seq of [1, 2, 3]) await client.query(`INSERT INTO "${schema}".events (run_id, seq, body) VALUES ($1, $2, $3)`, [id, seq, Buffer.from(`{"seq":${seq}}`)]);
      }
    });
    const where = async (runId: string) => {
      return await withClient(async (c) => {
        const row = await c.query(`SELECT checkpoint IS NOT NULL AS inline FROM "${schema}".runs WHERE run_id = $1`, [runId]);
        const table = await c.query(`SELECT seq::int AS seq FROM "${schema}".checkpoints WHERE run_id = $1`, [runId]);
        return { inline: row.rows[0].inline, table: table.rows.map((r) => r.seq) };
      });
    };
    const store = await PostgresJournalStore.open(pgUrl, { schema, poolSize: 1 });
    try {
      expect(await where('large-cp')).toEqual({ inline: false, table: [2] });
      expect(await where('small-cp')).toEqual({ inline: true, table: [] });
      const largeTail = (await store.load('large-cp'))!;
      expect(Buffer.from(largeTail.checkpoint!).toString()).toBe(large(2).toString());
      expect(Buffer.from(largeTail.events).toString()).toBe('{"seq":3}');
      expect(Buffer.from((await store.load('small-cp'))!.checkpoint!).toString()).toBe('{"at":2}');
      const none = (await store.load('no-cp'))!;
      expect(none.checkpoint).toBeUndefined();
      expect(Buffer.from(none.events).toString()).toBe('{"seq":1}\n{"seq":2}\n{"seq":3}');
      // A later large checkpoint replaces the moved one; a small one after it removes it.
      expect(await store.commit([{ runId: 'large-cp', expectedSeq: 3, lastSeq: 4, events: Buffer.from('{"seq":4}'), status: 'running', checkpoint: large(4) }])).toEqual([]);
      expect(await where('large-cp')).toEqual({ inline: false, table: [4] });
      expect(Buffer.from((await store.load('large-cp'))!.checkpoint!).toString()).toBe(large(4).toString());
      expect(await store.commit([{ runId: 'large-cp', expectedSeq: 4, lastSeq: 5, events: Buffer.from('{"seq":5}'), status: 'completed', checkpoint: Buffer.from('{"at":5}') }])).toEqual([]);
      expect(await where('large-cp')).toEqual({ inline: true, table: [] });
      const after = (await store.load('large-cp'))!;
      expect(Buffer.from(after.checkpoint!).toString()).toBe('{"at":5}');
      expect(after.events.byteLength).toBe(0);
      // A new run whose first commit carries a large checkpoint.
      expect(await store.commit([{ runId: 'fresh-large', expectedSeq: 0, lastSeq: 1, events: Buffer.from('{"seq":1}'), status: 'paused', plan: Buffer.from('{}'), checkpoint: large(1) }])).toEqual([]);
      expect(await where('fresh-large')).toEqual({ inline: false, table: [1] });
      expect(Buffer.from((await store.load('fresh-large'))!.checkpoint!).toString()).toBe(large(1).toString());
    } finally {
      await store.close();
    }
  });
});

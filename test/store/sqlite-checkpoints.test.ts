// Where the SQLite store keeps a run's checkpoint (schema v10): a small one in the run's row, as
// before; one larger than `checkpointInlineMax` in `checkpoints`, one row a run, written only by a
// commit that takes one. In the run's row a large one was written again by every commit that
// changed the row's size. A real file; writes are counted by triggers of this connection.
import { schemaVersion } from '../../hosts/node/stores/sqlite/migrations.js';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteJournalStore } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { checkpointInlineMax } from '../../dist/hosts/node/stores/sqlite/migrations.js';
import type { CommitEntry } from '../../hosts/core/store.js';

const dir = mkdtempSync(join(tmpdir(), 'sqlite-checkpoints-'));
const stores: SqliteJournalStore[] = [];
afterAll(() => {
  stores.forEach((s) => s.close());
  rmSync(dir, { recursive: true, force: true });
});

/** A store whose writes to `checkpoints` are counted. */
function countedStore(name: string) {
  const store = SqliteJournalStore.open(join(dir, `${name}.db`));
  stores.push(store);
  const writes = { n: 0 };
  store.db.function('count_checkpoint_write', () => ++writes.n);
  store.db.exec(`
    CREATE TEMP TRIGGER count_checkpoint_insert AFTER INSERT ON main.checkpoints BEGIN SELECT count_checkpoint_write(); END;
    CREATE TEMP TRIGGER count_checkpoint_update AFTER UPDATE ON main.checkpoints BEGIN SELECT count_checkpoint_write(); END;
  `);
  return { store, writes };
}

const plan = Buffer.from('{"plan":"p"}');
const small = (at: number) => Buffer.from(JSON.stringify({ at }));
const large = (at: number) => Buffer.from(JSON.stringify({ at, state: 'x'.repeat(checkpointInlineMax) }));

function entry(runId: string, expectedSeq: number, count: number, extra: Partial<CommitEntry> = {}): CommitEntry {
  const events = Array.from({ length: count }, (_, i) => JSON.stringify({ seq: expectedSeq + 1 + i }));
  return { runId, expectedSeq, lastSeq: expectedSeq + count, events: Buffer.from(events.join('\n')), status: 'running', ...(expectedSeq === 0 ? { plan } : {}), ...extra };
}

const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : Buffer.from(b).toString());
const seqs = (b: Uint8Array) => Buffer.from(b).toString().split('\n').map((l) => JSON.parse(l).seq);
const where = (store: SqliteJournalStore, runId: string) => ({
  row: store.db.prepare('SELECT checkpoint IS NOT NULL FROM runs WHERE run_id = ?').pluck().get(runId),
  table: store.db.prepare('SELECT count(*) FROM checkpoints WHERE run_id = ?').pluck().get(runId),
});

describe('the checkpoints of a SQLite store', () => {
  it('keeps a small checkpoint in the run row and writes none to checkpoints', () => {
    const { store, writes } = countedStore('small');
    expect(store.commit([entry('r0', 0, 3)])).toEqual([]);
    expect(store.commit([entry('r0', 3, 2, { checkpoint: small(5), status: 'completed' })])).toEqual([]);
    expect(where(store, 'r0')).toEqual({ row: 1, table: 0 });
    expect(writes.n).toBe(0);
    const tail = store.load('r0')!;
    expect(text(tail.checkpoint)).toBe('{"at":5}');
    expect(tail.events.byteLength).toBe(0);
  });

  it('writes a large checkpoint once, by the commit that takes it, and a small one after it removes it', () => {
    const { store, writes } = countedStore('large');
    expect(store.commit([entry('r1', 0, 3)])).toEqual([]);
    expect(store.commit([entry('r1', 3, 2, { checkpoint: large(5) })])).toEqual([]);
    expect(where(store, 'r1')).toEqual({ row: 0, table: 1 });
    expect(writes.n).toBe(1);
    // Commits that change the run row's size leave the checkpoint alone.
    for (let seq = 5; seq < 25; seq += 4) expect(store.commit([entry('r1', seq, 4, { outcome: { status: 'running', result: 'x'.repeat(seq) } })])).toEqual([]);
    expect(writes.n).toBe(1);
    let tail = store.load('r1')!;
    expect(text(tail.checkpoint)).toBe(text(large(5)));
    expect(seqs(tail.events)).toEqual(Array.from({ length: 20 }, (_, i) => 6 + i));

    expect(store.commit([entry('r1', 25, 1, { checkpoint: large(26) })])).toEqual([]);
    expect(writes.n).toBe(2);
    expect(text(store.load('r1')!.checkpoint)).toBe(text(large(26)));

    expect(store.commit([entry('r1', 26, 1, { checkpoint: small(27), status: 'completed' })])).toEqual([]);
    expect(where(store, 'r1')).toEqual({ row: 1, table: 0 });
    tail = store.load('r1')!;
    expect(text(tail.checkpoint)).toBe('{"at":27}');
    expect(tail.events.byteLength).toBe(0);
  });

  it("keeps the large checkpoint of a run's first commit, and writes none for a refused commit", () => {
    const { store, writes } = countedStore('first');
    expect(store.commit([entry('r2', 0, 2, { checkpoint: large(2), status: 'paused' })])).toEqual([]);
    expect(where(store, 'r2')).toEqual({ row: 0, table: 1 });
    expect(text(store.load('r2')!.checkpoint)).toBe(text(large(2)));
    const refused = store.commit([entry('r2', 1, 1, { checkpoint: large(99) })]);
    expect(refused).toMatchObject([{ runId: 'r2', code: 'store.conflict' }]);
    expect(writes.n).toBe(1);
    expect(text(store.load('r2')!.checkpoint)).toBe(text(large(2)));
  });

  it('moves the large checkpoints of a store of version 9 into checkpoints and keeps the small ones', () => {
    const file = join(dir, 'from-v9.db');
    copyFileSync(join(__dirname, '..', 'fixtures', 'stores', 'v9.db'), file);
    const old = new BetterSqlite3(file);
    const before = old.prepare("SELECT checkpoint FROM runs WHERE run_id = 'fx-echo-1'").pluck().get() as Buffer;
    old.prepare("UPDATE runs SET checkpoint = ? WHERE run_id = 'fx-approval-1'").run(large(10));
    old.close();
    const store = SqliteJournalStore.open(file);
    stores.push(store);
    expect(store.db.pragma('user_version', { simple: true })).toBe(schemaVersion);
    expect(where(store, 'fx-approval-1')).toEqual({ row: 0, table: 1 });
    expect(text(store.load('fx-approval-1')!.checkpoint)).toBe(text(large(10)));
    expect(where(store, 'fx-echo-1')).toEqual({ row: 1, table: 0 });
    expect(text(store.load('fx-echo-1')!.checkpoint)).toBe(before.toString());
  });

  it('names a run whose row and checkpoints disagree as corrupt', () => {
    const { store } = countedStore('corrupt');
    store.commit([entry('r3', 0, 2, { checkpoint: large(2) })]);
    store.commit([entry('r3', 2, 2)]);
    const corrupt = (message: string) => expect.objectContaining({ code: 'store.corrupt', message: expect.stringContaining(message) });
    store.db.prepare("UPDATE checkpoints SET seq = 1 WHERE run_id = 'r3'").run();
    expect(() => store.load('r3')).toThrow(corrupt('checkpoint at seq 2, the store holds one at seq 1'));
    store.db.prepare("UPDATE checkpoints SET seq = 2 WHERE run_id = 'r3'").run();
    store.db.prepare("UPDATE runs SET checkpoint = '{}' WHERE run_id = 'r3'").run();
    expect(() => store.load('r3')).toThrow(corrupt('both in its row and at seq 2 in checkpoints'));
    store.db.prepare("UPDATE runs SET checkpoint = NULL WHERE run_id = 'r3'").run();
    store.db.prepare("DELETE FROM checkpoints WHERE run_id = 'r3'").run();
    expect(() => store.load('r3')).toThrow(corrupt('the store holds none'));
  });
});

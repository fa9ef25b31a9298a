// Where the SQLite store keeps a run's checkpoint (schema v10): in `checkpoints`, one row a run,
// written only by a commit that takes one. In the run's row it was rewritten by every commit that
// changed the row's size. A real file; writes are counted by triggers of this connection.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteJournalStore } from '../../dist/hosts/node/journal.js';
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

function entry(runId: string, expectedSeq: number, count: number, extra: Partial<CommitEntry> = {}): CommitEntry {
  const events = Array.from({ length: count }, (_, i) => JSON.stringify({ seq: expectedSeq + 1 + i }));
  return { runId, expectedSeq, lastSeq: expectedSeq + count, events: Buffer.from(events.join('\n')), status: 'running', ...(expectedSeq === 0 ? { plan } : {}), ...extra };
}

const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : Buffer.from(b).toString());

describe('the checkpoints of a SQLite store', () => {
  it('has no checkpoint in the run row; a checkpoint is written once, by the commit that takes it', () => {
    const { store, writes } = countedStore('once');
    const columns = store.db.prepare("SELECT name FROM pragma_table_info('runs')").pluck().all();
    expect(columns).toContain('checkpoint_seq');
    expect(columns).not.toContain('checkpoint');

    expect(store.commit([entry('r1', 0, 3)])).toEqual([]);
    expect(store.commit([entry('r1', 3, 2, { checkpoint: Buffer.from('{"at":5}') })])).toEqual([]);
    expect(writes.n).toBe(1);
    for (let seq = 5; seq < 25; seq += 4) expect(store.commit([entry('r1', seq, 4, { outcome: { status: 'running', result: 'x'.repeat(seq) } })])).toEqual([]);
    expect(writes.n).toBe(1);
    let tail = store.load('r1')!;
    expect(text(tail.checkpoint)).toBe('{"at":5}');
    expect(Buffer.from(tail.events).toString().split('\n').map((l) => JSON.parse(l).seq)).toEqual(Array.from({ length: 20 }, (_, i) => 6 + i));

    // The next checkpoint replaces it.
    expect(store.commit([entry('r1', 25, 1, { checkpoint: Buffer.from('{"at":26}'), status: 'completed' })])).toEqual([]);
    expect(writes.n).toBe(2);
    tail = store.load('r1')!;
    expect(text(tail.checkpoint)).toBe('{"at":26}');
    expect(tail.events.byteLength).toBe(0);
    expect(store.db.prepare("SELECT count(*) FROM checkpoints WHERE run_id = 'r1'").pluck().get()).toBe(1);
  });

  it("keeps the checkpoint of a run's first commit, and writes none for a refused commit", () => {
    const { store, writes } = countedStore('first');
    expect(store.commit([entry('r2', 0, 2, { checkpoint: Buffer.from('{"at":2}'), status: 'paused' })])).toEqual([]);
    expect(text(store.load('r2')!.checkpoint)).toBe('{"at":2}');
    expect(writes.n).toBe(1);
    const refused = store.commit([entry('r2', 1, 1, { checkpoint: Buffer.from('{"at":"stale"}') })]);
    expect(refused).toMatchObject([{ runId: 'r2', code: 'store.conflict' }]);
    expect(writes.n).toBe(1);
    expect(text(store.load('r2')!.checkpoint)).toBe('{"at":2}');
  });

  it('names a run whose row and checkpoint disagree as corrupt', () => {
    const { store } = countedStore('corrupt');
    store.commit([entry('r3', 0, 2, { checkpoint: Buffer.from('{"at":2}') })]);
    store.commit([entry('r3', 2, 2)]);
    store.db.prepare("UPDATE checkpoints SET seq = 1 WHERE run_id = 'r3'").run();
    expect(() => store.load('r3')).toThrow(expect.objectContaining({ code: 'store.corrupt', message: expect.stringContaining('checkpoint at seq 2, the store holds one at seq 1') }));
    store.db.prepare("DELETE FROM checkpoints WHERE run_id = 'r3'").run();
    expect(() => store.load('r3')).toThrow(expect.objectContaining({ code: 'store.corrupt', message: expect.stringContaining('the store holds none') }));
  });
});

// How the SQLite store keeps a run's events (schema v9): a commit's events in one row of up to 64,
// `first_seq`..`seq`, their JSON lines joined by newlines; rows of stores written before v9 hold
// one event each (`first_seq` NULL) and are read beside the new ones. A real file; the rows are
// read back with SQL, the events through the store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { crc32 } from 'node:zlib';
import { SqliteJournalStore } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { crc32Portable } from '../../dist/hosts/node/stores/sqlite/checksum.js';
import type { CommitEntry } from '../../hosts/core/store.js';

const dir = mkdtempSync(join(tmpdir(), 'sqlite-event-rows-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const stores: SqliteJournalStore[] = [];
afterAll(() => stores.forEach((s) => s.close()));

function freshStore(): SqliteJournalStore {
  const store = SqliteJournalStore.open(join(dir, `case-${++n}.db`));
  stores.push(store);
  return store;
}

const plan = Buffer.from('{"plan":"p"}');
const line = (seq: number) => JSON.stringify({ seq, type: 'e', text: `event ${seq}` });
const lines = (from: number, count: number) => Array.from({ length: count }, (_, i) => line(from + i));

function entry(runId: string, expectedSeq: number, count: number, extra: Partial<CommitEntry> = {}): CommitEntry {
  return { runId, expectedSeq, lastSeq: expectedSeq + count, events: Buffer.from(lines(expectedSeq + 1, count).join('\n')), status: 'running', ...(expectedSeq === 0 ? { plan } : {}), ...extra };
}

const rowsOf = (store: SqliteJournalStore, runId: string) =>
  store.db.prepare('SELECT first_seq AS first, seq AS last, body FROM events WHERE run_id = ? ORDER BY seq').all(runId) as { first: number | null; last: number; body: Buffer }[];

describe('the events of a SQLite store, a commit to a row', () => {
  it('writes a commit in one row, a long one in rows of 64, and reads them back whole and by page', () => {
    const store = freshStore();
    expect(store.commit([entry('r1', 0, 3)])).toEqual([]);
    expect(store.commit([entry('r1', 3, 130)])).toEqual([]);
    expect(rowsOf(store, 'r1').map((r) => [r.first, r.last])).toEqual([[1, 3], [4, 67], [68, 131], [132, 133]]);
    expect(rowsOf(store, 'r1')[0].body.toString()).toBe(lines(1, 3).join('\n'));

    expect(Buffer.from(store.load('r1')!.events).toString()).toBe(lines(1, 133).join('\n'));
    // Pages that start and end inside rows, and one that crosses three of them.
    expect(store.readEvents('r1', 1, 1)).toEqual({ events: [line(2)], lastSeq: 2, more: true });
    expect(store.readEvents('r1', 60, 10)).toEqual({ events: lines(61, 10), lastSeq: 70, more: true });
    expect(store.readEvents('r1', 2, 131)).toEqual({ events: lines(3, 131), lastSeq: 133, more: false });
    expect(store.readEvents('r1', 125, 8)).toEqual({ events: lines(126, 8), lastSeq: 133, more: false });
    expect(store.readEvents('r1', 125, 7)).toEqual({ events: lines(126, 7), lastSeq: 132, more: true });
    expect(store.readEvents('r1', 133, 5)).toEqual({ events: [], lastSeq: 133, more: false });
  });

  it('loads only the events after a checkpoint, also when the checkpoint falls inside a row', () => {
    const store = freshStore();
    store.commit([entry('r1', 0, 100)]);
    store.commit([entry('r1', 100, 5, { checkpoint: Buffer.from('{"cp":105}') })]);
    store.commit([entry('r1', 105, 2)]);
    let tail = store.load('r1')!;
    expect(Buffer.from(tail.checkpoint!).toString()).toBe('{"cp":105}');
    expect(Buffer.from(tail.events).toString()).toBe(lines(106, 2).join('\n'));
    // A checkpoint at seq 70 lies inside the row 65..100 of the first commit.
    store.db.prepare("UPDATE runs SET checkpoint = '{\"cp\":70}', checkpoint_crc = NULL, checkpoint_seq = 70 WHERE run_id = 'r1'").run();
    tail = store.load('r1')!;
    expect(Buffer.from(tail.events).toString()).toBe(lines(71, 37).join('\n'));
    expect(tail.lastSeq).toBe(107);
  });

  it('reads rows written before v9, one event each, beside a commit written after', () => {
    const store = freshStore();
    store.commit([entry('old', 0, 1)]);
    // The run as a v8 store held it: seq 1..3 in rows of one event, first_seq NULL.
    store.db.prepare("DELETE FROM events WHERE run_id = 'old'").run();
    const insert = store.db.prepare('INSERT INTO events (run_id, seq, body) VALUES (?, ?, ?)');
    for (const seq of [1, 2, 3]) insert.run('old', seq, Buffer.from(line(seq)));
    store.db.prepare("UPDATE runs SET last_seq = 3 WHERE run_id = 'old'").run();
    expect(store.commit([entry('old', 3, 3)])).toEqual([]);
    expect(rowsOf(store, 'old').map((r) => [r.first, r.last])).toEqual([[null, 1], [null, 2], [null, 3], [4, 6]]);
    expect(Buffer.from(store.load('old')!.events).toString()).toBe(lines(1, 6).join('\n'));
    expect(store.readEvents('old', 0, 2)).toEqual({ events: lines(1, 2), lastSeq: 2, more: true });
    expect(store.readEvents('old', 2, 3)).toEqual({ events: lines(3, 3), lastSeq: 5, more: true });
    expect(store.readEvents('old', 4, 10)).toEqual({ events: lines(5, 2), lastSeq: 6, more: false });
  });

  it('names a row whose lines do not match its seq range as corrupt', () => {
    const store = freshStore();
    store.commit([entry('r1', 0, 4)]);
    // A row without a checksum (as before v12): its line count is still checked.
    store.db.prepare("UPDATE events SET body = ?, crc = NULL WHERE run_id = 'r1'").run(Buffer.from(lines(1, 3).join('\n')));
    expect(() => store.readEvents('r1', 0, 10)).toThrow(expect.objectContaining({ code: 'store.corrupt', message: 'run r1: the journal row for seq 1..4 holds 3 events' }));
  });

  it('names a row, a checkpoint or a plan whose bytes no longer match their checksum as corrupt', () => {
    const store = freshStore();
    store.commit([entry('r1', 0, 4, { checkpoint: Buffer.from('{"cp":4}') })]);
    store.commit([entry('r1', 4, 2)]);
    const row = store.db.prepare("SELECT body FROM events WHERE run_id = 'r1' AND seq = 6").get() as { body: Buffer };
    const changed = Buffer.from(row.body);
    changed[changed.length - 3] ^= 0x01; // one bit, inside a JSON string: still valid JSON, still 2 lines
    store.db.prepare("UPDATE events SET body = ? WHERE run_id = 'r1' AND seq = 6").run(changed);
    const corrupt = expect.objectContaining({ code: 'store.corrupt', message: expect.stringContaining('run r1: the journal row for seq 5..6 does not match the checksum it was stored with') });
    expect(() => store.readEvents('r1', 0, 10)).toThrow(corrupt);
    expect(() => store.load('r1')).toThrow(corrupt);
    store.db.prepare("UPDATE events SET body = ? WHERE run_id = 'r1' AND seq = 6").run(row.body);
    expect(store.readEvents('r1', 0, 10).events).toHaveLength(6);

    store.db.prepare("UPDATE runs SET checkpoint = '{\"cp\":5}' WHERE run_id = 'r1'").run();
    expect(() => store.load('r1')).toThrow(expect.objectContaining({ code: 'store.corrupt', message: expect.stringContaining('run r1: its checkpoint does not match') }));
    store.db.prepare("UPDATE runs SET checkpoint = '{\"cp\":4}', plan = CAST('{\"planHash\":\"x\"}' AS BLOB) WHERE run_id = 'r1'").run();
    expect(() => store.load('r1')).toThrow(expect.objectContaining({ code: 'store.corrupt', message: expect.stringContaining('run r1: its plan does not match') }));
  });

  it('computes, on a Node without zlib.crc32, the same checksums zlib does', () => {
    expect(crc32Portable(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32Portable(Buffer.alloc(0))).toBe(0);
    const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 131 + 7) & 0xff));
    for (const len of [1, 63, 64, 1000, 5000]) expect(crc32Portable(bytes.subarray(0, len))).toBe(crc32(bytes.subarray(0, len)));
  });
});

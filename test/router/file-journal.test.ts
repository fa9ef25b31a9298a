import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../hosts/core/store.js';
import type { RunProjection } from '../../hosts/core/types.js';
import { crc32c } from '../../hosts/router/crc32c.js';
import { FileJournalStore, journalFileKind, journalFileName } from '../../hosts/router/file-journal.js';
import { entry, eventLines, stepClock, tempDir, text, utf8 } from './helpers.js';

const open: FileJournalStore[] = [];
function openStore(dir: string): FileJournalStore {
  const store = FileJournalStore.open(dir, { clock: stepClock() });
  open.push(store);
  return store;
}
function reopen(store: FileJournalStore): FileJournalStore {
  store.close();
  return openStore(store.dir);
}
afterEach(() => {
  for (const store of open.splice(0)) store.close();
});

function storeError(fn: () => unknown): StoreError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(StoreError);
    return error as StoreError;
  }
  throw new Error('expected a StoreError');
}

function allEvents(store: FileJournalStore, runId: string, pageSize = 7): string[] {
  const out: string[] = [];
  let after = 0;
  for (;;) {
    const page = store.readEvents(runId, after, pageSize);
    out.push(...page.events);
    expect(page.lastSeq).toBe(after + page.events.length);
    after = page.lastSeq;
    if (!page.more) return out;
    expect(page.events.length).toBe(pageSize);
  }
}

describe('FileJournalStore commits and reads', () => {
  it('creates a run, appends events, and reads them back after a reopen', () => {
    let store = openStore(tempDir());
    expect(store.commit([entry('run-1', 0, 3, { plan: '{"plan":1}' })])).toEqual([]);
    expect(store.commit([entry('run-1', 3, 2, { status: 'waiting' })])).toEqual([]);
    for (let round = 0; round < 2; round++) {
      const tail = store.load('run-1')!;
      expect(text(tail.plan)).toBe('{"plan":1}');
      expect(tail.checkpoint).toBeUndefined();
      expect(text(tail.events)).toBe(eventLines('run-1', 1, 5).join('\n'));
      expect(tail.lastSeq).toBe(5);
      expect(store.getRun('run-1')).toEqual({
        runId: 'run-1',
        status: 'waiting',
        lastSeq: 5,
        createdAt: 1_700_000_001_000,
        updatedAt: 1_700_000_002_000,
      });
      expect(allEvents(store, 'run-1', 2)).toEqual(eventLines('run-1', 1, 5));
      store = reopen(store);
      expect(store.openReport).toMatchObject({ records: 2, droppedTailBytes: 0, runs: 1 });
    }
    expect(store.load('nope')).toBeUndefined();
    expect(store.getRun('nope')).toBeUndefined();
    expect(store.readEvents('nope', 4, 10)).toEqual({ events: [], lastSeq: 4, more: false });
  });

  it('pages events: empty page after the end, limit 0, afterSeq inside a batch', () => {
    const store = openStore(tempDir());
    store.commit([entry('r', 0, 10, { plan: 'p' })]);
    expect(store.readEvents('r', 10, 5)).toEqual({ events: [], lastSeq: 10, more: false });
    expect(store.readEvents('r', 3, 0)).toEqual({ events: [], lastSeq: 3, more: true });
    expect(store.readEvents('r', 4, 3)).toEqual({ events: eventLines('r', 5, 7), lastSeq: 7, more: true });
    expect(store.readEvents('r', 7, 100)).toEqual({ events: eventLines('r', 8, 10), lastSeq: 10, more: false });
  });

  it('group commit: a CAS conflict rejects only the conflicting entry', () => {
    let store = openStore(tempDir());
    store.commit([entry('a', 0, 1, { plan: 'pa' }), entry('b', 0, 1, { plan: 'pb' })]);
    const rejections = store.commit([
      entry('a', 1, 2), // ok
      entry('b', 0, 1), // stale: b is at 1
      entry('c', 0, 1, { plan: 'pc' }), // new run
      entry('c', 1, 1), // chained on the entry before it, same group
      entry('a', 1, 1), // stale within the group: a is now at 3
      entry('a', 0, 1, { plan: 'again' }), // a run is created once
      entry('ghost', 4, 1), // unknown run without a plan
    ]);
    expect(rejections.map((r) => [r.runId, r.code])).toEqual([
      ['b', 'store.conflict'],
      ['a', 'store.conflict'],
      ['a', 'store.conflict'],
      ['ghost', 'store.conflict'],
    ]);
    expect(rejections[0]!.message).toContain('expected seq 0, stored seq is 1');
    store = reopen(store);
    // Three successful calls wrote three records: the group is one record.
    expect(store.openReport.records).toBe(2);
    expect([store.getRun('a')!.lastSeq, store.getRun('b')!.lastSeq, store.getRun('c')!.lastSeq]).toEqual([3, 1, 2]);
    expect(allEvents(store, 'c')).toEqual(eventLines('c', 1, 2));
    expect(store.getRun('ghost')).toBeUndefined();
  });

  it('writes nothing when every entry conflicts', () => {
    const store = openStore(tempDir());
    store.commit([entry('a', 0, 1, { plan: 'p' })]);
    const size = store.fileBytes;
    expect(store.commit([entry('a', 0, 1)])).toHaveLength(1);
    expect(store.fileBytes).toBe(size);
  });

  it('refuses malformed entries before writing anything', () => {
    const store = openStore(tempDir());
    const bad = { ...entry('a', 0, 2, { plan: 'p' }), lastSeq: 3 };
    expect(() => store.commit([entry('b', 0, 1, { plan: 'p' }), bad])).toThrow(/announces 3 events but carries 2/);
    expect(store.getRun('b')).toBeUndefined();
  });

  it('load returns the latest checkpoint and only the events after it', () => {
    let store = openStore(tempDir());
    store.commit([entry('r', 0, 4, { plan: 'P' })]);
    store.commit([entry('r', 4, 2, { checkpoint: 'C6' })]);
    store.commit([entry('r', 6, 3)]);
    store.commit([entry('r', 9, 1, { checkpoint: 'C10' })]);
    store.commit([entry('r', 10, 2)]);
    for (let round = 0; round < 3; round++) {
      const tail = store.load('r')!;
      expect(text(tail.checkpoint)).toBe('C10');
      expect(text(tail.events)).toBe(eventLines('r', 11, 12).join('\n'));
      expect(tail.lastSeq).toBe(12);
      expect(allEvents(store, 'r', 5)).toEqual(eventLines('r', 1, 12));
      if (round === 0) store = reopen(store);
      if (round === 1) store.compact();
    }
    // The twin: a checkpoint in the last commit leaves no events to replay.
    store.commit([entry('r', 12, 1, { checkpoint: 'C13' })]);
    expect(text(store.load('r')!.events)).toBe('');
  });

  it('lists runs newest first, filtered by status', () => {
    const store = openStore(tempDir());
    store.commit([entry('a', 0, 1, { plan: 'p' })]);
    store.commit([entry('b', 0, 1, { plan: 'p', status: 'completed' })]);
    store.commit([entry('c', 0, 1, { plan: 'p' })]);
    expect(store.listRuns().map((r) => r.runId)).toEqual(['c', 'b', 'a']);
    expect(store.listRuns({ statuses: ['running'] }).map((r) => r.runId)).toEqual(['c', 'a']);
    expect(store.listRuns({ limit: 1 }).map((r) => r.runId)).toEqual(['c']);
  });

  it('refuses a second open of the same state directory', () => {
    const store = openStore(tempDir());
    expect(storeError(() => FileJournalStore.open(store.dir)).code).toBe('store.io');
    store.close();
    openStore(store.dir);
  });
});

describe('FileJournalStore recovery on open', () => {
  /** Three commits; returns the directory and the offset where the last record starts. */
  /** Three commits; also the high-water mark as it was before the last one (a torn last write never moved it). */
  function threeCommits(): { dir: string; lastStart: number; bytes: Buffer; markBefore: Buffer } {
    const dir = tempDir();
    const store = FileJournalStore.open(dir, { clock: stepClock() });
    store.commit([entry('a', 0, 2, { plan: 'plan-a' }), entry('b', 0, 1, { plan: 'plan-b' })]);
    store.commit([entry('a', 2, 3, { checkpoint: 'cp-a' })]);
    const lastStart = store.fileBytes;
    const markBefore = fs.readFileSync(path.join(dir, `${journalFileName}.mark`));
    store.commit([entry('a', 5, 2, { status: 'waiting' }), entry('b', 1, 1)]);
    store.close();
    return { dir, lastStart, bytes: fs.readFileSync(path.join(dir, journalFileName)), markBefore };
  }

  it('keeps exactly the complete records when the last record is cut at any byte', () => {
    const { dir, lastStart, bytes, markBefore } = threeCommits();
    const file = path.join(dir, journalFileName);
    expect(bytes.length - lastStart).toBeGreaterThan(100);
    for (let cut = lastStart; cut < bytes.length; cut++) {
      fs.writeFileSync(file, bytes.subarray(0, cut));
      fs.writeFileSync(`${file}.mark`, markBefore);
      const store = FileJournalStore.open(dir, { clock: stepClock() });
      try {
        expect(store.openReport).toMatchObject({ records: 2, droppedTailBytes: cut - lastStart });
        expect(store.fileBytes).toBe(lastStart);
        expect(store.getRun('a')!.lastSeq).toBe(5);
        expect(store.getRun('b')!.lastSeq).toBe(1);
        expect(text(store.load('a')!.checkpoint)).toBe('cp-a');
        // The store accepts new commits right where the intact records end.
        expect(store.commit([entry('a', 5, 1), entry('b', 1, 2)])).toEqual([]);
      } finally {
        store.close();
      }
      const again = FileJournalStore.open(dir);
      try {
        expect(again.openReport).toMatchObject({ records: 3, droppedTailBytes: 0 });
        expect(allEvents(again, 'a')).toEqual(eventLines('a', 1, 6));
        expect(allEvents(again, 'b')).toEqual(eventLines('b', 1, 3));
      } finally {
        again.close();
      }
    }
  });

  it('cuts off a zero-filled or garbage tail of one write', () => {
    const { dir, bytes } = threeCommits();
    const file = path.join(dir, journalFileName);
    for (const tail of [Buffer.alloc(4096), Buffer.from('not a record at all')]) {
      fs.writeFileSync(file, Buffer.concat([bytes, tail]));
      const store = FileJournalStore.open(dir);
      expect(store.openReport).toMatchObject({ records: 3, droppedTailBytes: tail.length });
      store.close();
    }
  });

  it('refuses a corrupt record in the middle with store.corrupt, never skipping it', () => {
    const { dir, lastStart, bytes } = threeCommits();
    const file = path.join(dir, journalFileName);
    // One byte inside the payload of the second record, then one inside its length field.
    const second = lastStart - 40;
    for (const at of [second, 16 + 8]) {
      const damaged = Buffer.from(bytes);
      damaged[at]! ^= 0x01;
      fs.writeFileSync(file, damaged);
      const error = storeError(() => FileJournalStore.open(dir));
      expect(error.code).toBe('store.corrupt');
      expect(error.message).toMatch(/followed by a valid record/);
      // The file is left as it was, for inspection.
      expect(fs.readFileSync(file).equals(damaged)).toBe(true);
    }
  });

  it('refuses a journal cut short of its acknowledged records, a missing one, unless the loss is accepted', () => {
    const { dir, lastStart, bytes } = threeCommits();
    const file = path.join(dir, journalFileName);
    // The last record was acknowledged: cutting into it, or at the record boundary before it, is a loss.
    for (const cut of [lastStart, lastStart + 20, bytes.length - 1]) {
      fs.writeFileSync(file, bytes.subarray(0, cut));
      const error = storeError(() => FileJournalStore.open(dir));
      expect(error.code).toBe('store.truncated');
      expect(error.message).toContain(`intact records end at byte ${lastStart} of ${cut}, but ${bytes.length} bytes were committed: ${bytes.length - lastStart} bytes`);
      expect(fs.readFileSync(file).length).toBe(cut);
    }
    const accepted = FileJournalStore.open(dir, { acceptLoss: true });
    expect(accepted.openReport).toMatchObject({ records: 2, droppedTailBytes: 0, loss: { code: 'store.truncated', committedBytes: bytes.length, intactBytes: lastStart, droppedBytes: bytes.length - 1 - lastStart } });
    accepted.close();
    // The accepted state is the new mark.
    const again = FileJournalStore.open(dir);
    expect(again.openReport.loss).toBeUndefined();
    again.close();
    fs.rmSync(file);
    expect(storeError(() => FileJournalStore.open(dir)).code).toBe('store.truncated');
    const empty = FileJournalStore.open(dir, { acceptLoss: true });
    expect(empty.openReport).toMatchObject({ runs: 0, loss: { code: 'store.truncated', committedBytes: lastStart } });
    empty.close();
  });

  it('refuses a bad file header and a newer format version', () => {
    const { dir, bytes } = threeCommits();
    const file = path.join(dir, journalFileName);
    fs.writeFileSync(file, Buffer.concat([Buffer.from('SQLite format 3\0'), bytes.subarray(16)]));
    expect(storeError(() => FileJournalStore.open(dir)).code).toBe('store.corrupt');
    const newer = Buffer.from(bytes);
    newer.writeUInt32LE(journalFileKind.version + 1, 8);
    newer.writeUInt32LE(crc32c(newer.subarray(0, 12)), 12);
    fs.writeFileSync(file, newer);
    expect(storeError(() => FileJournalStore.open(dir)).code).toBe('store.schema-too-new');
  });
});

describe('FileJournalStore projections', () => {
  const waiting: RunProjection = { status: 'paused', pausedReason: 'approval', approvals: [{ nodeId: 'ask', invocationId: 'iv-1', attempt: 1, approvers: ['ops'] }], calls: [{ invocationId: 'iv-1', nodeId: 'ask', attempt: 1, kind: 'approval', name: 'ask', effect: 'idempotent', requestedSeq: 2 }] };

  it('keeps the projection of each entry beside the status, through a reopen and a compaction', () => {
    let store = openStore(tempDir());
    store.commit([{ ...entry('run-1', 0, 3, { plan: 'p', status: 'paused' }), outcome: waiting }]);
    expect(store.getRun('run-1')!.outcome).toEqual(waiting);
    store = reopen(store);
    expect(store.getRun('run-1')!.outcome).toEqual(waiting);
    store.compact();
    expect(store.getRun('run-1')!.outcome).toEqual(waiting);
    store = reopen(store);
    expect(store.getRun('run-1')!.outcome).toEqual(waiting);
    // An entry without a projection leaves the run without one (it is derived again, never stale).
    store.commit([entry('run-1', 3, 1, { status: 'running' })]);
    expect(store.getRun('run-1')!.outcome).toBeUndefined();
    expect(store.runsWithoutProjection().map((r) => r.runId)).toEqual(['run-1']);
  });

  it('a version-1 file is read as it is, gets no projection bytes until compaction rewrites it in version 2', () => {
    const dir = tempDir();
    let store = openStore(dir);
    store.commit([entry('old', 0, 2, { plan: 'p', status: 'completed' })]);
    store.close();
    const file = path.join(dir, journalFileName);
    const v1 = fs.readFileSync(file);
    v1.writeUInt32LE(1, 8);
    v1.writeUInt32LE(crc32c(v1.subarray(0, 12)), 12);
    fs.writeFileSync(file, v1);
    store = openStore(dir);
    expect(store.formatVersion).toBe(1);
    expect(store.runsWithoutProjection().map((r) => r.runId)).toEqual(['old']);
    store.keepProjection('old', 2, { status: 'completed', result: 1 });
    store.commit([{ ...entry('new', 0, 1, { plan: 'p', status: 'paused' }), outcome: waiting }]);
    expect(store.getRun('new')!.outcome).toEqual(waiting);
    // Nothing of version 2 was appended to the version-1 file: an older reader still reads it.
    store = reopen(store);
    expect(store.formatVersion).toBe(1);
    expect(store.getRun('new')!.outcome).toBeUndefined();
    store.keepProjection('old', 2, { status: 'completed', result: 1 });
    store.keepProjection('new', 1, waiting);
    store.keepProjection('new', 7, { status: 'stale' });
    store.compact();
    expect(store.formatVersion).toBe(journalFileKind.version);
    store = reopen(store);
    expect(store.getRun('old')!.outcome).toEqual({ status: 'completed', result: 1 });
    expect(store.getRun('new')!.outcome).toEqual(waiting);
    expect(store.runsWithoutProjection()).toEqual([]);
  });
});

describe('crc32c', () => {
  it('matches the CRC-32C check value', () => {
    expect(crc32c(utf8('123456789'))).toBe(0xe3069283);
    expect(crc32c(utf8('6789'), crc32c(utf8('12345')))).toBe(0xe3069283);
  });
});

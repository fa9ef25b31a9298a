import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packSegments } from '../../hosts/router/compaction.js';
import { compactTempFileName, FileJournalStore, journalFileName } from '../../hosts/router/file-journal.js';
import { compactEventsChunkBytes } from '../../hosts/router/limits.js';
import { entry, eventLines, stepClock, tempDir, text } from './helpers.js';

interface Picture {
  runs: unknown;
  tails: Record<string, { plan?: string; checkpoint?: string; events?: string; lastSeq: number }>;
  events: Record<string, string[]>;
}

/** Everything a reader can observe of the store. */
function picture(store: FileJournalStore, runIds: readonly string[]): Picture {
  const out: Picture = { runs: store.listRuns(), tails: {}, events: {} };
  for (const runId of runIds) {
    const tail = store.load(runId)!;
    out.tails[runId] = { plan: text(tail.plan), checkpoint: text(tail.checkpoint), events: text(tail.events), lastSeq: tail.lastSeq };
    const events: string[] = [];
    for (let after = 0, more = true; more; ) {
      const page = store.readEvents(runId, after, 3);
      events.push(...page.events);
      after = page.lastSeq;
      more = page.more;
    }
    out.events[runId] = events;
  }
  return out;
}

/** A journal with live and terminal runs, checkpoints, and many small commits. */
function busyStore(dir: string): { store: FileJournalStore; runIds: string[] } {
  const store = FileJournalStore.open(dir, { clock: stepClock() });
  const runIds = ['live-1', 'live-2', 'done-1', 'failed-1', 'fresh'];
  store.commit(runIds.map((id) => entry(id, 0, id === 'fresh' ? 0 : 1, { plan: `{"plan":"${id}"}` })));
  let seq = 1;
  for (let i = 0; i < 30; i++, seq += 2) {
    store.commit(
      ['live-1', 'live-2', 'done-1', 'failed-1'].map((id) =>
        entry(id, seq, 2, i % 9 === 4 && id !== 'live-2' ? { checkpoint: `cp-${id}-${seq + 2}` } : {}),
      ),
    );
  }
  store.commit([entry('done-1', seq, 1, { status: 'completed' }), entry('failed-1', seq, 2, { status: 'failed' })]);
  return { store, runIds };
}

describe('compaction', () => {
  it('keeps every fact readable: plans, latest checkpoints, all events, statuses', () => {
    const dir = tempDir();
    let { store, runIds } = busyStore(dir);
    const before = picture(store, runIds);
    expect((before.tails['done-1'] as { checkpoint: string }).checkpoint).toBe('cp-done-1-47');
    const report = store.compact();
    expect(report).toMatchObject({ runs: 5, events: 61 + 61 + 62 + 63 + 0 });
    expect(report.bytesAfter).toBeLessThan(report.bytesBefore);
    expect(picture(store, runIds)).toEqual(before);
    store.close();
    store = FileJournalStore.open(dir, { clock: stepClock(1_800_000_000_000) });
    expect(store.openReport.records).toBeGreaterThan(0);
    expect(picture(store, runIds)).toEqual(before);
    // Commits continue after compaction, with the same compare-and-set.
    expect(store.commit([entry('live-1', 61, 1), entry('live-2', 60, 1)])).toHaveLength(1);
    expect(store.readEvents('live-1', 61, 10).events).toEqual(eventLines('live-1', 62, 62));
    store.compact();
    store.close();
    store = FileJournalStore.open(dir);
    expect(store.readEvents('live-1', 0, 1000).events).toEqual(eventLines('live-1', 1, 62));
    store.close();
  });

  it('a leftover temporary file of an interrupted compaction is removed; the old journal stands', () => {
    const dir = tempDir();
    const { store, runIds } = busyStore(dir);
    const before = picture(store, runIds);
    store.close();
    const journal = fs.readFileSync(path.join(dir, journalFileName));
    // A crash while writing (half a file), and a crash after writing but before the rename.
    for (const leftover of [journal.subarray(0, journal.length >> 1), journal]) {
      fs.writeFileSync(path.join(dir, compactTempFileName), leftover);
      const reopened = FileJournalStore.open(dir, { clock: stepClock() });
      expect(reopened.openReport.removedTempFiles).toEqual([compactTempFileName]);
      expect(fs.existsSync(path.join(dir, compactTempFileName))).toBe(false);
      expect(picture(reopened, runIds)).toEqual(before);
      reopened.close();
    }
    const reopened = FileJournalStore.open(dir);
    expect(reopened.commit([entry('live-1', 61, 1)])).toEqual([]);
    reopened.compact();
    expect(reopened.readEvents('live-1', 60, 10).events).toEqual(eventLines('live-1', 61, 62));
    reopened.close();
  });

  it('packs segments up to the chunk size and never across the checkpoint of a live run', () => {
    const seg = (firstSeq: number, lastSeq: number, length: number) => ({ firstSeq, lastSeq, offset: 0, length });
    const half = compactEventsChunkBytes / 2;
    const segments = [seg(1, 2, 10), seg(3, 4, 10), seg(5, 5, 10), seg(6, 9, half), seg(10, 10, half), seg(11, 11, 1)];
    const ranges = (chunks: ReturnType<typeof packSegments>) => chunks.map((c) => [c[0]!.firstSeq, c[c.length - 1]!.lastSeq]);
    expect(ranges(packSegments(segments))).toEqual([[1, 9], [10, 11]]);
    expect(ranges(packSegments(segments, 4))).toEqual([[1, 4], [5, 9], [10, 11]]);
    expect(ranges(packSegments([seg(1, 1, 3 * compactEventsChunkBytes), seg(2, 2, 1)]))).toEqual([[1, 1], [2, 2]]);
  });
});

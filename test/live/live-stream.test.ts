// Three subscribers on one run of 10,000 events: each sees every committed event exactly
// once, in seq order, the slow one (a tiny buffer) through gap markers and journal reads. The
// tool's own count of calls is the oracle for how many were committed.
import { describe, expect, it } from 'vitest';
import type { LiveItem } from '../../dist/hosts/node/index.js';
import { chain, openRuntime } from '../helpers/node-host.js';

function sweepTemplate() {
  const t = chain('sweep', [
    {
      id: 'each',
      uses: 'core.foreach@1',
      config: { maxConcurrency: 8, maxItems: 10_000, body: { uses: 'tool.call@1', config: { tool: 'echo', idempotent: true } } },
      inputs: { items: { source: 'input', path: '/items' } },
    },
  ]);
  t.spec.requires = ['tool:echo'];
  return t;
}

async function collect(stream: AsyncIterable<LiveItem>, slow: boolean): Promise<{ seqs: number[]; types: string[]; gaps: number }> {
  const seqs: number[] = [];
  const types: string[] = [];
  let gaps = 0;
  let n = 0;
  for await (const item of stream) {
    if (item.kind === 'gap') {
      gaps++;
      continue;
    }
    if (item.kind !== 'event') throw new Error(`a ${item.kind} item in a run whose tools report no progress`);
    expect(item.event.seq).toBe(item.seq);
    seqs.push(item.seq);
    types.push(item.event.type);
    // The slow subscriber yields to the event loop on every event and sleeps now and then.
    if (slow) await new Promise((r) => (++n % 50 === 0 ? setTimeout(r, 2) : setImmediate(r)));
  }
  return { seqs, types, gaps };
}

describe('runtime.live', () => {
  it('three subscribers, one slow with a tiny buffer, each see every committed event once and in order', async () => {
    let calls = 0;
    const rt = await openRuntime({ tools: { echo: (input: unknown) => (calls++, { echoed: input }) } });
    try {
      const items = Array.from({ length: 2500 }, (_, i) => i);
      const handle = await rt.launch(sweepTemplate(), { input: { items }, executionMode: 'background' });
      const subscribers = [collect(handle.live(), false), collect(rt.live(handle.runId), false), collect(rt.live(handle.runId, { bufferEventsMax: 4 }), true)];
      const worker = await rt.startWorker();
      const outcome = await handle.result;
      const seen = await Promise.all(subscribers);
      await worker.stop();

      expect(outcome.status).toBe('completed');
      expect(calls).toBe(items.length);
      const expected = Array.from({ length: outcome.seq }, (_, i) => i + 1);
      expect(outcome.seq).toBeGreaterThanOrEqual(10_000);
      for (const s of seen) {
        expect(s.seqs).toEqual(expected);
        expect(s.types.filter((t) => t === 'capability.completed')).toHaveLength(calls);
        expect(s.types.filter((t) => t === 'run.completed')).toHaveLength(1);
      }
      // The slow one fell behind and caught up through the journal (else this proves nothing).
      expect(seen[2].gaps).toBeGreaterThan(0);
    } finally {
      await rt.close();
    }
  }, 120_000);

  it('resumes after afterSeq, and ends at once on a run that has ended', async () => {
    const rt = await openRuntime({ tools: { echo: (input: unknown) => ({ echoed: input }) } });
    try {
      const handle = await rt.launch(sweepTemplate(), { input: { items: [1, 2, 3] } });
      const outcome = await handle.result;
      const after = await collect(rt.live(handle.runId, { afterSeq: 5 }), false);
      expect(after.seqs).toEqual(Array.from({ length: outcome.seq - 5 }, (_, i) => i + 6));
      const past = await collect(rt.live(handle.runId, { afterSeq: outcome.seq }), false);
      expect(past.seqs).toEqual([]);
    } finally {
      await rt.close();
    }
  });

  it('stays open on a paused run until the caller stops, and refuses an unknown run', async () => {
    const rt = await openRuntime();
    try {
      const handle = await rt.launch(chain('gate', [{ id: 'gate', uses: 'human.approval@1' }], { requires: ['approval'] }));
      const paused = await handle.settled();
      expect(paused.status).toBe('paused');
      const stop = new AbortController();
      const types: string[] = [];
      for await (const item of rt.live(handle.runId, { signal: stop.signal })) {
        if (item.kind === 'event') types.push(item.event.type);
        if (item.kind === 'event' && item.event.type === 'run.paused') stop.abort();
      }
      expect(types).toContain('run.paused');
      expect(types).not.toContain('run.completed');
      await expect(rt.live('no-such-run').next()).rejects.toMatchObject({ code: 'run.not-found' });
    } finally {
      await rt.close();
    }
  });
});

describe('live-only progress', () => {
  it('hands a tool’s progress to the subscribers, marked not journaled, and keeps it out of the journal', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const rt = await openRuntime({
      tools: {
        echo: async (input: unknown, ctx: { progress?: (data: unknown) => void }) => {
          await held;
          for (const step of ['one', 'two', 'three']) ctx.progress?.({ step });
          return { echoed: input };
        },
      },
    });
    try {
      const handle = await rt.launch(sweepTemplate(), { input: { items: ['x'] } });
      const items: LiveItem[] = [];
      const reading = (async () => {
        for await (const item of handle.live()) {
          items.push(item);
          // Released once the subscriber is level with the feed (it has read the request).
          if (item.kind === 'event' && item.event.type === 'capability.requested') setImmediate(release);
        }
      })();
      await reading;
      const progress = items.filter((i) => i.kind === 'progress');
      expect(progress).toEqual(['one', 'two', 'three'].map((step, i) => expect.objectContaining({ kind: 'progress', journaled: false, nodeId: 'each', item: 0, data: { step }, liveSeq: i + 1 })));
      const journal = JSON.stringify((await rt.exportRun(handle.runId)).events);
      expect(journal).not.toContain('"step"');
      const events = items.filter((i) => i.kind === 'event').map((i) => (i as { seq: number }).seq);
      expect(events).toEqual(events.map((_, n) => n + 1));
    } finally {
      await rt.close();
    }
  });
});

// A foreach with `failurePolicy: continue` records the errors of its failed items in its output.
// An item error without an explicit boolean `retryable` must give the same output live, across
// a restart, and in recorded replay.
import { describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';

function lookupTemplate() {
  const t = chain('lookup-all', [
    {
      id: 'each',
      uses: 'core.foreach@1',
      config: { maxConcurrency: 1, failurePolicy: 'continue', body: { uses: 'tool.call@1', config: { tool: 'lookup', idempotent: true } } },
      inputs: { items: { source: 'input', path: '/ids' } },
    },
  ]);
  t.spec.requires = ['tool:lookup'];
  t.spec.outputs = { found: { source: 'output', nodeId: 'each', path: '/results' }, failed: { source: 'output', nodeId: 'each', path: '/failures' } };
  return t;
}

/** Fails `missing` with an error that says nothing about retrying; `hang` never answers. */
function lookup(hang: boolean) {
  return (id: string) => {
    if (id === 'missing') throw Object.assign(new Error(`no record ${id}`), { code: 'lookup.not-found' });
    if (id === 'slow' && hang) return new Promise(() => undefined);
    return { id };
  };
}

const expectedOutput = {
  found: [null, { id: 'slow' }],
  failed: [{ index: 0, error: { code: 'lookup.not-found', message: 'no record missing' } }],
};

describe('foreach failurePolicy continue', () => {
  it('completes when an item error has no retryable, live and in recorded replay', async () => {
    const rt = await openRuntime({ tools: { lookup: lookup(false) } });
    try {
      const handle = await rt.launch(lookupTemplate(), { input: { ids: ['missing', 'slow'] } });
      const outcome = await handle.result;
      expect(outcome).toMatchObject({ status: 'completed', output: expectedOutput });
      expect(await rt.replay(handle.runId, { mode: 'recorded' })).toMatchObject({ identical: true, firstDivergence: null });
    } finally {
      await rt.close();
    }
  });

  it('gives the same output when the run crosses a restart after the failed item', async () => {
    const dir = tempDir();
    const first = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { lookup: lookup(true) } });
    const handle = await first.launch(lookupTemplate(), { input: { ids: ['missing', 'slow'] } });
    while (!(await first.readEvents(handle.runId)).events.some((e) => e.type === 'capability.requested' && e.payload.item === 1)) await new Promise((r) => setTimeout(r, 5));
    await first.close();

    const second = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { lookup: lookup(false) } });
    try {
      const outcome = await (await second.resume(handle.runId, { by: 'ops' })).result;
      expect(outcome).toMatchObject({ status: 'completed', output: expectedOutput });
      expect(await second.replay(handle.runId, { mode: 'recorded' })).toMatchObject({ identical: true, firstDivergence: null });
    } finally {
      await second.close();
    }
  });
});

describe('foreach failurePolicy fail-fast', () => {
  it("keeps a failed run's error in getRun after more than 8 late completions", async () => {
    const rt = await openRuntime({
      tools: {
        work: (n: number) => (n === 0 ? Promise.reject(Object.assign(new Error('item zero broke'), { code: 'work.broken' })) : new Promise((r) => setTimeout(() => r({ n }), 300))),
      },
    });
    try {
      const t = chain('fail-fast-late', [
        { id: 'each', uses: 'core.foreach@1', config: { maxConcurrency: 12, body: { uses: 'tool.call@1', config: { tool: 'work', idempotent: true } } }, inputs: { items: { source: 'input', path: '/items' } } },
      ]);
      t.spec.requires = ['tool:work'];
      const handle = await rt.launch(t, { input: { items: Array.from({ length: 12 }, (_, i) => i) } });
      const outcome = await handle.result;
      expect(outcome.status).toBe('failed');
      expect(outcome.error).toMatchObject({ code: 'node.failed', message: expect.stringContaining('item 0 failed') });
      // The 11 cancelled items come back after run.failed: each is recorded as capability.late.
      let events: any[] = [];
      for (let i = 0; i < 100; i++) {
        events = (await rt.readEvents(handle.runId)).events;
        if (events.filter((e) => e.type === 'capability.late').length >= 11) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const failedAt = events.findIndex((e) => e.type === 'run.failed');
      expect(events.slice(failedAt + 1).filter((e) => e.type === 'capability.late').length).toBe(11);
      const run = await rt.getRun(handle.runId);
      expect(run.lastSeq).toBeGreaterThan(events[failedAt].seq + 8);
      expect(run).toMatchObject({ status: 'failed', error: outcome.error });
      expect(run.error).toEqual(events[failedAt].payload.error);
    } finally {
      await rt.close();
    }
  });
});

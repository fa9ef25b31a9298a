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

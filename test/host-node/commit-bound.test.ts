// The bound on one commit's size (`commitBytesMax`): a call whose output would take its
// activation's commit past it fails its node with `run.commit-too-large`, recorded as the call's
// result so that a replay reads the same failure; the bound is checked when the runtime opens.
import { describe, expect, it } from 'vitest';
import { chain, openRuntime } from '../helpers/node-host.js';

const big = 'x'.repeat(100_000);
const template = () => chain('commit-bound', [{ id: 'fetch', uses: 'tool.call@1', config: { tool: 'fetch', idempotent: true } }], { requires: ['tool:fetch'] });

describe('commitBytesMax', () => {
  it('fails the node typed, naming the bound and the size, and a recorded replay reads the same failure', async () => {
    // Outputs are kept inline up to 1 MiB here (by default one past 16 KiB becomes an artifact,
    // and the journal holds its reference only).
    const rt = await openRuntime({ commitBytesMax: 131_072, capture: { inlineBytesMax: 1_048_576 }, tools: { fetch: { idempotent: true, execute: () => big } } });
    try {
      const handle = await rt.launch(template());
      const outcome: any = await handle.result;
      expect(outcome.status).toBe('failed');
      expect(outcome.error.detail).toMatchObject({ nodeId: 'fetch', error: { code: 'run.commit-too-large', retryable: false } });
      expect(outcome.error.detail.error.message).toContain('at most 131072');
      expect(outcome.error.detail.error.message).toMatch(/would hold 2\d{5} bytes/);
      const events = (await rt.readEvents(handle.runId, { limit: 1000 })).events as any[];
      const completed = events.find((e) => e.type === 'capability.completed');
      expect(completed.payload).toMatchObject({ ok: false, error: { code: 'run.commit-too-large', retryable: false } });
      expect(completed.payload.output).toBeUndefined();
      // No event of the run holds the output.
      expect(events.every((e) => JSON.stringify(e).length < 10_000)).toBe(true);
      expect(await rt.replay(handle.runId, { mode: 'recorded' })).toMatchObject({ identical: true, firstDivergence: null });
    } finally {
      await rt.close();
    }
  });

  it('lets the same output through under the default bound', async () => {
    const rt = await openRuntime({ capture: { inlineBytesMax: 1_048_576 }, tools: { fetch: { idempotent: true, execute: () => big } } });
    try {
      const handle = await rt.launch(template());
      expect(await handle.result).toMatchObject({ status: 'completed' });
      const events = (await rt.readEvents(handle.runId, { limit: 1000 })).events as any[];
      expect(events.find((e) => e.type === 'node.output-committed' && e.node.id === 'fetch').payload.output).toBe(big);
    } finally {
      await rt.close();
    }
  });

  it('refuses an activation whose events pass the bound all the same (a script output), writing nothing', async () => {
    const rt = await openRuntime({ commitBytesMax: 65_536 });
    try {
      const launched = rt.launch(chain('commit-bound-script', [{ id: 's', uses: 'core.script@1', config: { source: "return 'y'.repeat(70000)" } }]), { runId: 'run-too-large' });
      await expect(launched).rejects.toMatchObject({ code: 'run.commit-too-large', message: expect.stringContaining('(at most 65536, commitBytesMax)') });
      await expect(rt.getRun('run-too-large')).rejects.toMatchObject({ code: 'run.not-found' });
    } finally {
      await rt.close();
    }
  });

  it('refuses a bound below the smallest one at open', async () => {
    await expect(openRuntime({ commitBytesMax: 1000 })).rejects.toMatchObject({ code: 'host.bad-option' });
  });
});

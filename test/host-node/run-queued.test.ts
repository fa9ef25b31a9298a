// `run.queued`: a background run's journal says that it was queued and when, right after its
// `run.accepted`; an inline run has none. A recorded replay and the run's views read it.
import { describe, expect, it } from 'vitest';
import { chain, openRuntime } from '../helpers/node-host.js';

describe('run.queued', () => {
  it('is journaled for a background run with the time it was queued, and replays identically', async () => {
    let clock = Date.parse('2026-06-01T10:00:00.000Z');
    const rt = await openRuntime({ now: () => clock });
    try {
      const t = chain('queued-run', [{ id: 's', uses: 'core.script@1', config: { source: 'return 1' } }]);
      const inline = await rt.launch(t);
      expect((await inline.result).status).toBe('completed');
      expect((await rt.readEvents(inline.runId)).events.map((e: any) => e.type)).not.toContain('run.queued');

      const queued = await rt.launch(t, { executionMode: 'background' });
      expect((await rt.getRun(queued.runId)).status).toBe('queued');
      clock += 5_000;
      const worker = await rt.startWorker({ deliveries: false });
      try {
        expect((await queued.result).status).toBe('completed');
      } finally {
        await worker.stop();
      }
      const events = (await rt.readEvents(queued.runId)).events as any[];
      expect(events.slice(0, 3).map((e) => [e.seq, e.type])).toEqual([[1, 'run.accepted'], [2, 'run.queued'], [3, 'run.started']]);
      expect(events[1].payload).toEqual({ queuedAt: '2026-06-01T10:00:00.000Z' });
      expect(events[1].occurredAt).toBe('2026-06-01T10:00:05.000Z');
      expect(await rt.replay(queued.runId, { mode: 'recorded' })).toMatchObject({ identical: true, firstDivergence: null });
      expect((await rt.getRun(queued.runId)).status).toBe('completed');
    } finally {
      await rt.close();
    }
  });
});

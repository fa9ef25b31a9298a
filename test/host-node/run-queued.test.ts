// `run.queued`: a background run's journal says that it was queued and when, right after its
// `run.accepted`; an inline run has none. A recorded replay and the run's views read it. The same
// on SQLite and on PostgreSQL (each keeps the queue time with the queued launch).
import { describe, expect, it } from 'vitest';
import type { RuntimeOptions } from '../../dist/hosts/node/index.js';
import { chain, openRuntime } from '../helpers/node-host.js';
import { pgUrl, testSchema } from '../helpers/postgres.js';

const schema = testSchema('run_queued');

describe.each<[string, RuntimeOptions]>([
  ['SQLite', {}],
  ['PostgreSQL', { store: `${pgUrl}?schema=${schema}` }],
])('run.queued on %s', (_name, storeOptions) => {
  it('is journaled for a background run with the time it was queued, and replays identically', async () => {
    // A clock that moves only when told (near the real one: PostgreSQL leases compare it with the store's).
    let clock = Date.now();
    const queuedAt = new Date(clock).toISOString();
    const rt = await openRuntime({ ...storeOptions, now: () => clock });
    try {
      const t = chain('queued-run', [{ id: 's', uses: 'core.script@1', config: { source: 'return 1' } }]);
      const inline = await rt.launch(t);
      expect((await inline.result).status).toBe('completed');
      expect((await rt.readEvents(inline.runId)).events.map((e: any) => e.type)).not.toContain('run.queued');

      const queued = await rt.launch(t, { executionMode: 'background' });
      expect((await rt.getRun(queued.runId)).status).toBe('queued');
      clock = Math.max(clock + 500, Date.now());
      const startedAt = new Date(clock).toISOString();
      const worker = await rt.startWorker({ deliveries: false });
      try {
        expect((await queued.result).status).toBe('completed');
      } finally {
        await worker.stop();
      }
      const events = (await rt.readEvents(queued.runId)).events as any[];
      expect(events.slice(0, 3).map((e) => [e.seq, e.type])).toEqual([[1, 'run.accepted'], [2, 'run.queued'], [3, 'run.started']]);
      expect(events[1].payload).toEqual({ queuedAt });
      expect(events[1].occurredAt).toBe(startedAt);
      expect(await rt.replay(queued.runId, { mode: 'recorded' })).toMatchObject({ identical: true, firstDivergence: null });
      expect((await rt.getRun(queued.runId)).status).toBe('completed');
    } finally {
      await rt.close();
    }
  });
});

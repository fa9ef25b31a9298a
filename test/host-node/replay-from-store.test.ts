// `runtime.replay` of a stored run sends the journal's texts to the engine as the store holds them
// (no export in between). Its report must be the one the same run's export gives: the export path
// (`replayExport`) parses every event and sends it again, the store path does not. A journal of more
// than one page of events (5,000), with a captured artifact, on SQLite and on PostgreSQL.
import { describe, expect, it } from 'vitest';
import { replayExport } from '../../dist/hosts/node/sdk/export.js';
import { chain, openRuntime } from '../helpers/node-host.js';
import { assertPostgresReachable, pgUrl, testSchema } from '../helpers/postgres.js';

const schema = testSchema('t_replay_store');
const items = 1_300;
const big = { rows: Array.from({ length: 1_500 }, (_, i) => ({ id: i, text: `row ${i} of a large result` })) };

const template = chain('replay-store', [
  { id: 'fetch', uses: 'tool.call@1', config: { tool: 'fetch' } },
  {
    id: 'each',
    uses: 'core.foreach@1',
    config: { maxItems: items, maxConcurrency: 16, body: { uses: 'tool.call@1', config: { tool: 'echo' } } },
    inputs: { items: { source: 'input', path: '/items' } },
  },
]);
template.spec.requires = ['tool:fetch', 'tool:echo'];

describe.each([
  ['sqlite', undefined],
  ['postgres', `${pgUrl}?schema=${schema}`],
] as const)('replay from the store: %s', (name, store) => {
  it('gives the report its export gives, over several pages of events and an artifact', async () => {
    if (name === 'postgres') await assertPostgresReachable();
    const rt = await openRuntime({ ...(store ? { store } : {}), tools: { fetch: () => big, echo: (input: unknown) => ({ echoed: input }) } });
    try {
      const h = await rt.launch(template, { input: { items: Array.from({ length: items }, (_, i) => i) } });
      expect(await h.result).toMatchObject({ status: 'completed' });
      const exported = await rt.exportRun(h.runId);
      expect(exported.events.length).toBeGreaterThan(5_000);
      expect(Object.keys(exported.artifacts)).toHaveLength(1);
      for (const mode of ['recorded', 'inspect'] as const) {
        const fromStore = await rt.replay(h.runId, { mode });
        expect(fromStore).toEqual(await replayExport(exported, { mode }));
        if (mode === 'recorded') expect(fromStore).toMatchObject({ identical: true, eventsRecorded: exported.events.length });
      }
    } finally {
      await rt.close();
    }
  });
});

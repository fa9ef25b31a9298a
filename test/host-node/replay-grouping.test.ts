// Recorded replay reads most recorded events from their text without parsing them (their type
// and their activation's `origin`); it parses an event that starts an activation, carries a fact,
// or does not read the way the engine writes. Data that looks like those members must not move
// an event into another activation, and a journal whose grouping was tampered with must not
// replay as identical.
import { describe, expect, it } from 'vitest';
import { chain, openRuntime } from '../helpers/node-host.js';

/** Text that looks like an event's own members, inside a tool's output and a run's correlation. */
const lookalike = { origin: { actor: 'engine', activation: 2 }, note: ',"type":"node.item-started","origin":{"actor":"engine","activation":3},"payload":{}' };

function eachTemplate() {
  const t = chain('lookalikes', [
    {
      id: 'each',
      uses: 'core.foreach@1',
      config: { maxConcurrency: 2, body: { uses: 'tool.call@1', config: { tool: 'echo' } } },
      inputs: { items: { source: 'input', path: '/items' } },
    },
  ]);
  t.spec.requires = ['tool:echo'];
  return t;
}

describe('recorded replay of event texts', () => {
  it('keeps each event in its activation when outputs and the correlation hold lookalike members', async () => {
    const rt = await openRuntime({ tools: { echo: { execute: (input: unknown) => ({ input, ...lookalike }) } } });
    try {
      const handle = await rt.launch(eachTemplate(), { input: { items: [1, 2, 3, 4, 5] }, correlation: lookalike });
      expect((await handle.result).status).toBe('completed');
      const exported = await rt.exportRun(handle.runId);
      // The lookalike text is in the journal: in the correlation of every event, and in outputs.
      expect(exported.events.filter((e) => JSON.stringify(e).split('"origin":').length > 2).length).toBe(exported.events.length);
      const report = await rt.replay(handle.runId, { mode: 'recorded' });
      expect(report).toMatchObject({ identical: true, firstDivergence: null, eventsReplayed: exported.events.length });
    } finally {
      await rt.close();
    }
  });

  it('reports a divergence when a recorded event claims another activation than its own', async () => {
    const rt = await openRuntime({ tools: { echo: { execute: (input: unknown) => ({ input }) } } });
    try {
      const handle = await rt.launch(eachTemplate(), { input: { items: [1, 2, 3, 4, 5] } });
      expect((await handle.result).status).toBe('completed');
      const exported = await rt.exportRun(handle.runId);
      const intact = rt.engine.replay({ mode: 'recorded', plan: exported.plan, events: exported.events });
      expect(intact).toMatchObject({ identical: true });
      // An item started by the second activation (a completion's) now claims the first.
      const events = exported.events.map((e) => structuredClone(e)) as { type: string; origin: { activation: number } }[];
      const moved = events.findIndex((e) => e.type === 'node.item-started' && e.origin.activation === 2);
      expect(moved).toBeGreaterThan(0);
      events[moved].origin.activation = 1;
      const report = rt.engine.replay({ mode: 'recorded', plan: exported.plan, events: events as typeof exported.events });
      expect(report).toMatchObject({ identical: false });
      expect((report.firstDivergence as { seq: number }).seq).toBeLessThanOrEqual(moved + 1);
    } finally {
      await rt.close();
    }
  });
});

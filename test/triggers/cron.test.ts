// Cron bindings on the catalog, in real time with a seconds pattern (every 2 s) and real `serve`
// processes: a worker serves, is stopped for at least three slots, then two workers serve at once.
// Every slot of every binding is recorded exactly once (`launched` or `missed`), each group of
// missed slots follows its binding's misfire policy, and no slot makes two runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliOk, echo, publishBinding, publishTemplate, serve, until, world, type World } from './helpers.js';

const periodMs = 2000;
const policies = [
  { id: 'cron-skip', misfire: { policy: 'skip' }, runLate: 0 },
  { id: 'cron-once', misfire: { policy: 'run-once' }, runLate: 1 },
  { id: 'cron-all', misfire: { policy: 'run-all', bound: 2 }, runLate: 2 },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('cron bindings with a worker stopped for three slots', () => {
  let w: World;
  beforeAll(async () => {
    w = world();
    await publishTemplate(w, echo);
    for (const p of policies) {
      await publishBinding(w, { id: p.id, source: 'cron', config: { pattern: '*/2 * * * * *', timezone: 'Europe/Berlin', misfire: p.misfire }, target: 'echo@1', input: { text: { pointer: '/slot' } } });
    }
  });
  afterAll(async () => undefined);

  const records = async (id: string) => (await cliOk(w, ['ingress', 'list', '--binding', id, '--limit', '1000'])).records;
  const liveLaunches = async (id: string, after: number) => (await records(id)).filter((r: any) => r.status === 'launched' && r.reasonCode === undefined && r.occurredAt > after).length;

  it('records every slot once, follows each misfire policy, and makes one run per slot with two workers', async () => {
    const a = await serve(w);
    await until('two live slots of every binding', async () => (await Promise.all(policies.map((p) => liveLaunches(p.id, 0)))).every((n) => n >= 2));
    await a.stop();
    const stoppedAt = Date.now();
    // Stopped for more than three slots.
    await sleep(3 * periodMs + 1500);
    const [b, c] = await Promise.all([serve(w), serve(w)]);
    const restartedAt = Date.now();
    await until('two live slots of every binding after the restart', async () => (await Promise.all(policies.map((p) => liveLaunches(p.id, restartedAt)))).every((n) => n >= 2));
    await Promise.all([b.stop(), c.stop()]);

    const allRuns = (await cliOk(w, ['runs', '--limit', '1000'])).runs;
    for (const p of policies) {
      const rs = (await records(p.id)).sort((x: any, y: any) => x.occurredAt - y.occurredAt);
      expect(rs.every((r: any) => r.status === 'launched' || r.status === 'missed')).toBe(true);
      // Every slot from the first recorded to the last, each exactly once.
      const slots = rs.map((r: any) => r.occurredAt);
      for (let i = 1; i < slots.length; i++) expect({ binding: p.id, step: slots[i] - slots[i - 1] }).toEqual({ binding: p.id, step: periodMs });
      expect(rs.map((r: any) => r.sourceEventId)).toEqual(slots.map((t: number) => `slot:${new Date(t).toISOString()}`));
      // Groups of slots that passed while no worker served: the first ones of each run late, by the
      // policy (reason code trigger.misfire), the others missed.
      const groups: any[][] = [];
      let current: any[] = [];
      for (const r of rs) {
        const misfired = r.reasonCode === 'trigger.misfire';
        if (misfired) current.push(r);
        else if (current.length > 0) (groups.push(current), (current = []));
      }
      if (current.length > 0) groups.push(current);
      const gap = groups.find((g) => g.some((r) => r.occurredAt > stoppedAt && r.occurredAt < restartedAt));
      expect(gap, `${p.id}: the slots of the stop`).toBeDefined();
      expect(gap!.length).toBeGreaterThanOrEqual(3);
      for (const g of groups) {
        const expected = g.map((_, i) => (i < p.runLate ? 'launched' : 'missed'));
        expect({ binding: p.id, statuses: g.map((r) => r.status) }).toEqual({ binding: p.id, statuses: expected });
        for (const r of g) expect(r).toMatchObject({ reasonCode: 'trigger.misfire', reason: expect.stringContaining(`misfire policy ${p.misfire.policy}`) });
      }
      // One run per launched slot, whatever number of workers fired it.
      const launched = rs.filter((r: any) => r.status === 'launched');
      expect(new Set(launched.map((r: any) => r.runId)).size).toBe(launched.length);
      for (const r of launched) expect(allRuns.filter((run: any) => run.runId === r.runId)).toHaveLength(1);
    }
    // The runs carry their slot as input, through the binding's mapping.
    const one = (await records('cron-skip')).find((r: any) => r.status === 'launched');
    const trace = await cliOk(w, ['trace', one.runId, '--format', 'json']);
    const accepted = (trace.events ?? trace)[0] ?? trace;
    expect(JSON.stringify(accepted)).toContain(new Date(one.occurredAt).toISOString());
  }, 90_000);
});

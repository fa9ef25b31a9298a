// The run list's paging and filters in both stores (SQLite on a file, PostgreSQL on the real
// server): pages after a cursor put together are the whole list in order, ties of created_at
// broken by run id; time bounds, the run id prefix, the template, the origin and what a paused
// run waits for select exactly the runs they say.
import { describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, tempDir } from '../helpers/node-host.js';
import { pgUrl, testSchema } from '../helpers/postgres.js';

const schema = testSchema('adw_console_list');
const stores: [string, () => Record<string, unknown>][] = [
  ['SQLite', () => ({ dir: tempDir() })],
  ['PostgreSQL', () => ({ store: `${pgUrl}?schema=${schema}` })],
];

const say = chain('say', [{ id: 'say', uses: 'tool.call@1', config: { tool: 'echo' } }]);
say.spec.requires = ['tool:echo'];
const gate = chain('gate', [{ id: 'gate', uses: 'human.approval@1', config: { prompt: 'Go?' } }]);
gate.spec.requires = ['approval'];

describe.each(stores)('run list paging in %s', (_name, where) => {
  it('pages with a cursor and filters by status, time, run id prefix, template, origin and wait', async () => {
    // A coarse clock (50 ms steps, close to the real one, which PostgreSQL's lease check needs), so
    // that runs share a created_at and ties are paged through too.
    const now = () => Date.now() - (Date.now() % 50);
    const rt = await WorkflowRuntime.open({ ...where(), now, log: () => undefined, tools: { echo: (i: unknown) => i } });
    try {
      for (let i = 0; i < 7; i++) await (await rt.launch(say, { input: { i } })).result;
      const all = await rt.listRuns({ limit: 100 });
      expect(all).toHaveLength(7);
      const order = [...all].sort((a, b) => b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0));
      expect(all.map((r) => r.runId)).toEqual(order.map((r) => r.runId));

      expect(await rt.countRuns()).toEqual({ completed: 7 });
      const paged: string[] = [];
      let before: { createdAt: number; runId: string } | undefined;
      for (let page = 0; page < 5; page++) {
        const rows = await rt.listRuns({ limit: 3, ...(before ? { before } : {}) });
        paged.push(...rows.map((r) => r.runId));
        if (rows.length < 3) break;
        before = { createdAt: rows[2].createdAt, runId: rows[2].runId };
      }
      expect(paged).toEqual(all.map((r) => r.runId));

      const pivot = all[3].createdAt;
      expect((await rt.listRuns({ createdFrom: pivot })).map((r) => r.runId)).toEqual(all.filter((r) => r.createdAt >= pivot).map((r) => r.runId));
      expect((await rt.listRuns({ createdTo: pivot })).map((r) => r.runId)).toEqual(all.filter((r) => r.createdAt < pivot).map((r) => r.runId));
      expect((await rt.listRuns({ runIdPrefix: all[2].runId })).map((r) => r.runId)).toEqual([all[2].runId]);
      expect(await rt.listRuns({ statuses: ['failed'], createdFrom: 0 })).toEqual([]);
      expect((await rt.listRuns({ statuses: ['completed'], before: { createdAt: all[4].createdAt, runId: all[4].runId } })).map((r) => r.runId)).toEqual(all.slice(5).map((r) => r.runId));

      // A run paused for an approval, of another template: the template, origin and wait filters.
      const waiting = await rt.launch(gate, { input: {} });
      const gated = waiting.runId;
      for (let i = 0; i < 100 && (await rt.getRun(gated))?.pausedReason !== 'approval'; i++) await new Promise((r) => setTimeout(r, 50));
      const ids = async (filter: Parameters<typeof rt.listRuns>[0]) => (await rt.listRuns(filter)).map((r) => r.runId);
      expect(await ids({ pausedReason: 'approval' })).toEqual([gated]);
      expect(await ids({ pausedReason: 'needs_attention' })).toEqual([]);
      expect(await ids({ template: 'gate' })).toEqual([gated]);
      expect(await ids({ template: 'gate@inline' })).toEqual([gated]);
      expect(await ids({ template: 'gat' })).toEqual([]);
      expect(await ids({ template: 'say', limit: 100 })).toEqual(all.map((r) => r.runId));
      expect(await ids({ origin: 'direct', limit: 100 })).toEqual(await ids({ limit: 100 }));
      expect(await ids({ limit: 100 })).toHaveLength(8);
      expect(await ids({ origin: 'trigger' })).toEqual([]);
      expect(await ids({ origin: { bindingId: 'hook' } })).toEqual([]);
      expect(await ids({ search: gated })).toEqual([gated]);
      expect(await ids({ search: 'no-such-event' })).toEqual([]);
      // Text in the correlation a launch recorded (its origin): the channel message it came from.
      const fromSlack = (await rt.launch(say, { input: { i: 1 }, origin: { channel: 'slack', message: 'msg-7731' } })).runId;
      await rt.follow(fromSlack).settled();
      // The same text in a run's input is not its correlation.
      await (await rt.launch(say, { input: { i: 'msg-7731 slack' } })).result;
      expect(await ids({ search: 'msg-7731' })).toEqual([fromSlack]);
      expect(await ids({ search: 'slack' })).toEqual([fromSlack]);
      expect(await ids({ search: 'msg-9999' })).toEqual([]);
    } finally {
      await rt.close();
    }
  }, 60_000);
});

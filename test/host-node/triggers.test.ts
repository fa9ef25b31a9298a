// Cron triggers start one run per scheduled slot, even when fired twice.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TriggerScheduler, triggerRunId } from '../../dist/hosts/node/index.js';
import { openRuntime } from '../helpers/node-host.js';

const echo = JSON.parse(readFileSync(new URL('../../examples/echo/echo.json', import.meta.url), 'utf8'));

describe('cron triggers', () => {
  it('start one run per slot with a run id derived from the slot, even with two schedulers armed', async () => {
    const rt = await openRuntime({ tools: { echo: (i: { text: string }) => ({ text: i.text }) } });
    const a = new TriggerScheduler(rt);
    const b = new TriggerScheduler(rt);
    try {
      const spec = { id: 'every-second', cron: '* * * * * *', target: { type: 'inline' as const, template: echo }, input: { text: 'tick' } };
      a.add(spec);
      b.add(spec);
      while (a.list().fired.filter((f) => f.started).length < 2) await new Promise((r) => setTimeout(r, 50));
      a.stop();
      b.stop();
      await new Promise((r) => setTimeout(r, 100));
      const fired = [...a.list().fired, ...b.list().fired];
      const slots = new Set(fired.map((f) => f.scheduledAt));
      const runs = await rt.listRuns();
      // Two schedulers, one run per slot.
      const stored = await Promise.all(fired.map(async (f) => ((await rt.store.getRun(f.runId)) ? f.runId : undefined)));
      expect(runs.length).toBe(new Set(stored.filter(Boolean)).size);
      expect(runs.length).toBeLessThanOrEqual(slots.size);
      for (const f of fired) {
        expect(f.runId).toBe(triggerRunId('every-second', new Date(f.scheduledAt)));
        expect(new Date(f.scheduledAt).getMilliseconds()).toBe(0);
        expect(f.error).toBeUndefined();
      }
      // Fired runs wait in the durable queue until a worker takes them.
      const first = runs[runs.length - 1];
      expect(first.status).toBe('queued');
      const worker = await rt.startWorker();
      expect(await rt.follow(first.runId).result).toMatchObject({ status: 'completed', output: { echoed: 'tick' } });
      await worker.stop();
      expect((await rt.readEvents(first.runId)).events[0].correlation).toMatchObject({ trigger: 'every-second' });
    } finally {
      a.stop();
      b.stop();
      await rt.close();
    }
  });

  it('refuses a bad pattern or id with a typed error', async () => {
    const rt = await openRuntime();
    const s = new TriggerScheduler(rt);
    try {
      expect(() => s.add({ id: 'bad', cron: 'not a cron', target: { type: 'inline', template: echo } })).toThrow(expect.objectContaining({ code: 'trigger.bad-cron' }));
      expect(() => s.add({ id: '../x', cron: '* * * * *', target: { type: 'inline', template: echo } })).toThrow(expect.objectContaining({ code: 'trigger.bad-id' }));
    } finally {
      s.stop();
      await rt.close();
    }
  });
});

describe('a worker starting after a crash', () => {
  it('resumes every unfinished run: safe calls in flight are sent again', async () => {
    const { WorkflowRuntime } = await import('../../dist/hosts/node/index.js');
    const { tempDir } = await import('../helpers/node-host.js');
    const dir = tempDir();
    const first = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { fetch: { readOnly: true, execute: () => new Promise(() => undefined) } } });
    const t = { ...echo, metadata: { id: 'fetcher' }, spec: { requires: ['tool:fetch'], nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'fetch', uses: 'tool.call@1', config: { tool: 'fetch' }, readOnly: true }, { id: 'end', uses: 'core.end@1' }], edges: [{ from: 'start', to: 'fetch' }, { from: 'fetch', to: 'end' }], outputs: { got: { source: 'output', nodeId: 'fetch' } } } };
    const run = await first.launch(t);
    await first.close();
    const calls: string[] = [];
    const second = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { fetch: { readOnly: true, execute: (_: unknown, ctx: { invocationId: string; reissued: boolean }) => (calls.push(`${ctx.invocationId}:${ctx.reissued}`), { ok: 1 }) } } });
    try {
      const recovered = await second.recoverPending({ by: 'worker' });
      expect(recovered.map((r) => r.runId)).toEqual([run.runId]);
      expect(await (await second.resume(run.runId)).result).toMatchObject({ status: 'completed', output: { got: { ok: 1 } } });
      expect(calls).toHaveLength(1);
      expect(calls[0].endsWith(':true')).toBe(true);
    } finally {
      await second.close();
    }
  });
});

// A worker that takes a run over applies the operator's "retry" from the inbox (a new attempt,
// `capability.requested`) and may also resume the run (`afterRestart`, which abandons every call
// in flight). Applied in one activation, the resume abandons the new attempt in the commit that
// requests it: the journal says the call never ran, so the host must not run it. Applied in the
// next activation, after the retry's commit dispatched the new attempt here, the resume must not
// abandon it: this process is running it. The oracles are the tool's own call list and the journal.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Kernel } from '../../dist/hosts/core/kernel.js';
import { registryGateway } from '../../dist/hosts/node/sdk/gateway.js';
import { openJournalStore } from '../../dist/hosts/node/stores/open-store.js';
import { chain, scriptlessEngine } from '../helpers/node-host.js';

const everything = { id: 'local', scopes: ['*'] };

describe('a call requested and abandoned by one activation', () => {
  it('is not carried out: the tool is never called for it', async () => {
    const store = await openJournalStore(join(mkdtempSync(join(tmpdir(), 'adw-settled-')), 'workflow.db'));
    const calls: string[] = [];
    const engine = await scriptlessEngine({ load: (runId) => store.loadSync!(runId) });
    // A charge that never answers: its first attempt stays in flight until the "restart".
    const gateway = registryGateway({ tools: { charge: { execute: (_input: unknown, ctx: { invocationId: string }) => (calls.push(ctx.invocationId), new Promise(() => {})) } } } as never);
    const kernel = new Kernel({ store: store as never, engine, gateway, log: () => undefined, authority: () => everything, flushMode: 'manual' });
    const plan = engine.compile({ root: { template: chain('charge', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], { requires: ['tool:charge'] }) } });
    const runId = 'run-settled-in-activation';
    try {
      const launched = kernel.launch({ runId, plan, input: {}, authority: everything });
      await kernel.flush();
      await launched;
      await new Promise((r) => setTimeout(r, 20));
      expect(calls).toHaveLength(1);

      // A restart: the first attempt's outcome is unknown, the node needs attention.
      const restarted = kernel.deliver(runId, { type: 'resume-requested', by: 'recovery', afterRestart: true, effects: {} });
      await kernel.flush();
      expect(await restarted).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });

      // The operator's retry and a takeover's resume, applied in one activation.
      const retried = kernel.deliver(runId, { type: 'outcome-resolved', nodeId: 'charge', resolution: 'retry', by: 'operator' });
      const takenOver = kernel.deliver(runId, { type: 'resume-requested', by: 'worker', afterRestart: true, effects: {} });
      await kernel.flush();
      await Promise.all([retried, takenOver]);
      await new Promise((r) => setTimeout(r, 50));

      const events = (await store.readEvents(runId, 0, 1000)).events.map((e: string) => JSON.parse(e));
      const requested = events.filter((e: any) => e.type === 'capability.requested').map((e: any) => e.payload.invocationId);
      const abandoned = events.filter((e: any) => e.type === 'capability.abandoned').map((e: any) => e.payload.invocationId);
      // The second attempt was requested and abandoned in one commit, and never ran.
      expect(requested).toHaveLength(2);
      expect(abandoned).toEqual(requested);
      const second = events.filter((e: any) => e.payload?.invocationId === requested[1]);
      expect(new Set(second.map((e: any) => e.origin.activation)).size).toBe(1);
      expect(calls).toEqual([requested[0]]);
    } finally {
      await kernel.close?.();
      await store.close();
    }
  });

  /**
   * A worker claims a run whose first owner stalled past its lease, applies the operator's retry,
   * and resumes the run: `together`, both queued before the takeover's activation; otherwise the
   * resume is queued while the retry's commit is on its way (as `serve` does when its inbox poll
   * took the command first). Either way the new attempt runs once, here, and completes.
   */
  async function retriedByWorker(together: boolean): Promise<void> {
    const store = await openJournalStore(join(mkdtempSync(join(tmpdir(), 'adw-settled-')), 'workflow.db'));
    const TTL = 3000;
    let clock = 1_700_000_000_000;
    const engineOf = () => scriptlessEngine({ load: (runId) => store.loadSync!(runId) });
    const plan = (await engineOf()).compile({ root: { template: chain('charge', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], { requires: ['tool:charge'] }) } });
    const runId = 'run-resumed-while-committing';
    // The first owner's attempt never answers; the worker's answers after 100 ms.
    const first = new Kernel({ store: store as never, engine: await engineOf(), gateway: registryGateway({ tools: { charge: { execute: () => new Promise(() => {}) } } } as never), log: () => undefined, now: () => clock, authority: () => everything, leases: { owner: 'first', ttlMs: TTL, pollMs: 50 } });
    const workerCalls: string[] = [];
    const gateway = registryGateway({ tools: { charge: { execute: async (_i: unknown, ctx: { invocationId: string }) => (workerCalls.push(ctx.invocationId), await new Promise((r) => setTimeout(r, 100)), { charged: 1 }) } } } as never);
    let worker!: Kernel;
    let resumed = false;
    // While the commit of the retry is on its way, the worker resumes the run (as `serve` does
    // when it found no command left to apply: its poll loop took the command first).
    const racing = new Proxy(store, {
      get(target, prop) {
        if (prop === 'commit') {
          return async (entries: { events: Uint8Array }[]) => {
            if (!together && !resumed && entries.some((e) => new TextDecoder().decode(e.events).includes('"node.resolved"'))) {
              resumed = true;
              void worker.resume(runId, 'worker', everything).catch(() => undefined);
            }
            return target.commit(entries as never);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    worker = new Kernel({ store: racing as never, engine: await engineOf(), gateway, log: () => undefined, now: () => clock, authority: () => everything, leases: { owner: 'worker', ttlMs: TTL, pollMs: 50 } });
    try {
      await first.launch({ runId, plan, input: {}, authority: everything });
      // The first owner stalls past its lease; the worker claims the run, and the operator's
      // retry is applied by the worker together with the takeover.
      clock += TTL + 1000;
      const [claimed] = await store.ownership!.claim('worker', 1, TTL, clock);
      expect(claimed).toMatchObject({ runId, kind: 'takeover' });
      worker.leases!.committed(runId, claimed.epoch, clock);
      worker.claimed(runId, claimed.epoch);
      const retried = worker.deliver(runId, { type: 'outcome-resolved', nodeId: 'charge', resolution: 'retry', by: 'operator' });
      if (together) {
        resumed = true;
        void worker.resume(runId, 'worker', everything).catch(() => undefined);
      }
      await retried;
      expect(resumed).toBe(true);
      const outcome = await worker.waitFor(runId, true);
      expect(outcome.status).toBe('completed');
      const events = (await store.readEvents(runId, 0, 1000)).events.map((e: string) => JSON.parse(e));
      const requested = events.filter((e: any) => e.type === 'capability.requested').map((e: any) => e.payload.invocationId);
      expect(requested).toHaveLength(2);
      // The first attempt was abandoned by the takeover; the second ran once and completed.
      expect(events.filter((e: any) => e.type === 'capability.abandoned').map((e: any) => e.payload.invocationId)).toEqual([requested[0]]);
      expect(events.filter((e: any) => e.type === 'capability.completed').map((e: any) => e.payload.invocationId)).toEqual([requested[1]]);
      expect(events.filter((e: any) => e.type === 'capability.late')).toEqual([]);
      expect(workerCalls).toEqual([requested[1]]);
    } finally {
      await worker.close?.();
      await first.close?.();
      await store.close();
    }
  }

  it("is not abandoned by a worker's resume queued with the operator's retry", async () => {
    await retriedByWorker(true);
  });

  it("is not abandoned by a worker's resume queued before the commit that dispatched it landed", async () => {
    await retriedByWorker(false);
  });
});

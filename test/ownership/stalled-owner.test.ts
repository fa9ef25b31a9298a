// A process that stalls between committing a call's request and starting the call (a long GC, a
// starved CPU) may have lost its lease by then: another process took the run over and abandoned
// the call as an unknown outcome. The stalled process must not start it afterwards. The stall
// is a store whose commit returns only after the lease has expired and another owner took the
// run; the oracle is the tool's own call count. A process whose lease renewal lands late (a
// saturated pool) must not start a call on what is left of it either: the oracle there is the
// lease's remaining time in the store when the tool runs.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Kernel } from '../../dist/hosts/core/kernel.js';
import { registryGateway } from '../../dist/hosts/node/sdk/gateway.js';
import { openJournalStore } from '../../dist/hosts/node/stores/open-store.js';
import { chain, scriptlessEngine } from '../helpers/node-host.js';

const TTL = 3000;
const everything = { id: 'local', scopes: ['*'] };

/**
 * `takeover`: stall past the lease and another process takes the run; `slow-renewal`: stall two
 * thirds of the lease, and the renewal that follows takes most of the lease's lifetime to land;
 * `in-gateway`: the stall comes after the call was dispatched, while the gateway resolves the
 * node's credential, and another process takes the run meanwhile; `self-takeover`: the same, but
 * this process's own claim loop takes the run over again (a new lease epoch), as a worker does
 * with a run whose lease expired.
 */
type Stall = 'none' | 'takeover' | 'slow-renewal' | 'in-gateway' | 'self-takeover';

async function stalledHost(stall: Stall) {
  const store = await openJournalStore(join(mkdtempSync(join(tmpdir(), 'adw-stall-')), 'workflow.db'));
  let clock = 1_700_000_000_000;
  const calls: string[] = [];
  /** For each call, how long the run's lease had left in the store when the tool ran. */
  const leaseLeft: number[] = [];
  const logs: string[] = [];
  let takenOver = false;
  let stalled = false;
  let slowRenewals = 0;
  const ownership = store.ownership!;
  const slowRenewing = new Proxy(ownership, {
    get(target, prop) {
      if (prop === 'renewLeases') {
        return async (owner: string, leases: ReadonlyMap<string, number>, ttlMs: number, now: number) => {
          const lost = await target.renewLeases(owner, leases, ttlMs, now);
          // The first renewal lands when only 200 ms of the lease it asked for is left.
          if (stall === 'slow-renewal' && slowRenewals++ === 0) clock = now + ttlMs - 200;
          return lost;
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  // The commit that holds the call's request lands; then the process stalls past its lease, and
  // another process takes the run over before this one gets to start the call.
  const stalling = new Proxy(store, {
    get(target, prop) {
      if (prop === 'commit') {
        return async (entries: { runId: string; events: Uint8Array }[]) => {
          const result = await target.commit(entries as never);
          const requested = entries.find((e) => new TextDecoder().decode(e.events).includes('"capability.requested"'));
          if (stall === 'slow-renewal' && requested && !stalled) {
            stalled = true;
            clock += (TTL * 2) / 3 + 100;
          }
          if (stall === 'takeover' && requested && !takenOver) {
            takenOver = true;
            clock += TTL + 1000;
            const grant = await target.ownership.acquireLease(requested.runId, 'the-other-process', TTL, clock);
            expect(grant.ok).toBe(true);
          }
          return result;
        };
      }
      if (prop === 'ownership') return slowRenewing;
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const engine = await scriptlessEngine({ load: (runId) => store.loadSync!(runId) });
  const gateway = registryGateway({
    credentials: async (ref: { runId: string }) => {
      if (stall === 'in-gateway' && !takenOver) {
        takenOver = true;
        clock += TTL + 1000;
        const grant = await ownership.acquireLease(ref.runId, 'the-other-process', TTL, clock);
        expect(grant.ok).toBe(true);
      }
      if (stall === 'self-takeover' && !takenOver) {
        takenOver = true;
        clock += TTL + 1000;
        // The claim loop of a worker finds the run's lease expired, its own included, and takes it.
        const [claimed] = await ownership.claim('this-process', 1, TTL, clock);
        expect(claimed).toMatchObject({ runId: ref.runId, kind: 'takeover', epoch: 2 });
        kernel.leases!.committed(ref.runId, claimed.epoch, clock);
        kernel.claimed(ref.runId, claimed.epoch);
      }
      return { credential: 'card-token' };
    },
    tools: {
      charge: {
        execute: async (_input: unknown, ctx: { invocationId: string; runId: string }) => {
          calls.push(ctx.invocationId);
          const lease = (await store.getRun(ctx.runId))?.lease;
          leaseLeft.push((lease?.expiresAt ?? -Infinity) - clock);
          return { charged: 1 };
        },
      },
    },
  } as never);
  // The gateway's credential resolver reaches this kernel only when a call runs, after it is made.
  const kernel: Kernel = new Kernel({
    store: stalling as never,
    engine,
    gateway,
    log: (level: string, message: string) => logs.push(`${level} ${message}`),
    now: () => clock,
    authority: () => everything,
    leases: { owner: 'this-process', ttlMs: TTL, pollMs: 50 },
  });
  const config = { tool: 'charge', ...(stall === 'in-gateway' || stall === 'self-takeover' ? { credentialRef: 'card' } : {}) };
  const plan = engine.compile({ root: { template: chain('charge-once', [{ id: 'charge', uses: 'tool.call@1', config }], { requires: ['tool:charge'] }) } });
  return { kernel, store, plan, calls, leaseLeft, logs };
}

/** Waits up to 2 s for the tool's first call. */
async function untilCalled(calls: string[]): Promise<void> {
  for (let i = 0; i < 100 && calls.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
}

describe('a process that stalls past its lease', () => {
  /** Launches the run under `stall` and checks that its call never started and who holds the run now. */
  async function expectNotStarted(stall: Stall, runId: string, holder: { owner: string; epoch: number }): Promise<void> {
    const h = await stalledHost(stall);
    try {
      await h.kernel.launch({ runId, plan: h.plan, input: {}, authority: everything });
      await new Promise((r) => setTimeout(r, 300));
      expect(h.calls).toEqual([]);
      expect(h.logs.some((l) => l.includes('was not started: this process no longer owns the run'))).toBe(true);
      expect((await h.store.getRun(runId))?.lease).toMatchObject(holder);
    } finally {
      await h.kernel.close?.();
      await h.store.close();
    }
  }

  it('does not start the call it committed once another process has taken the run over', async () => {
    await expectNotStarted('takeover', 'run-stalled', { owner: 'the-other-process', epoch: 2 });
  });

  it('does not start a call whose lease ran out while the gateway prepared it (credentials) and another process took the run', async () => {
    await expectNotStarted('in-gateway', 'run-stalled-in-gateway', { owner: 'the-other-process', epoch: 2 });
  });

  it('does not start a call of an earlier lease epoch after this process took the run over again itself', async () => {
    await expectNotStarted('self-takeover', 'run-self-takeover', { owner: 'this-process', epoch: 2 });
  });

  it('without a stall, the same call starts once (the check lets a live owner through)', async () => {
    const h = await stalledHost('none');
    try {
      await h.kernel.launch({ runId: 'run-live', plan: h.plan, input: {}, authority: everything });
      await untilCalled(h.calls);
      expect(h.calls).toHaveLength(1);
    } finally {
      await h.kernel.close?.();
      await h.store.close();
    }
  });

  it('does not start a call on the little left of a lease whose renewal landed late: it renews again first', async () => {
    const h = await stalledHost('slow-renewal');
    try {
      await h.kernel.launch({ runId: 'run-slow-renewal', plan: h.plan, input: {}, authority: everything });
      await untilCalled(h.calls);
      expect(h.calls).toHaveLength(1);
      expect(h.leaseLeft[0]).toBeGreaterThan(TTL / 3);
    } finally {
      await h.kernel.close?.();
      await h.store.close();
    }
  });
});

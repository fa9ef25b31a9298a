// Every outcome of a call that ran ends in the journal, whichever way the commit that was to hold
// it lost. Here the commit fails outright (an I/O error of the store, once) or is refused for a seq
// conflict (another writer moved the run first, once): the outcome must reach the journal through
// the run's inbox, and the call must not run again. The oracle is the tool's own call list.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Kernel } from '../../dist/hosts/core/kernel.js';
import { StoreError } from '../../dist/hosts/core/store.js';
import { registryGateway } from '../../dist/hosts/node/sdk/gateway.js';
import { openJournalStore } from '../../dist/hosts/node/stores/open-store.js';
import { chain, scriptlessEngine } from '../helpers/node-host.js';
import { pgUrl, testSchema } from '../helpers/postgres.js';

const everything = { id: 'local', scopes: ['*'] };
const pgStore = `${pgUrl}?schema=${testSchema('t_late_receipts')}`;

type Loss = 'io-error' | 'seq-conflict';

async function host(location: string, loss: Loss) {
  const store = await openJournalStore(location);
  const calls: string[] = [];
  const logs: string[] = [];
  let lost = false;
  const losing = new Proxy(store, {
    get(target, prop) {
      if (prop === 'commit') {
        return async (entries: { runId: string; events: Uint8Array }[]) => {
          const completing = entries.some((e) => new TextDecoder().decode(e.events).includes('"capability.completed"'));
          if (completing && !lost) {
            lost = true;
            if (loss === 'io-error') throw new StoreError('store.io', 'the disk went away for a moment');
            return entries.map((e) => ({ runId: e.runId, code: 'store.conflict', message: `run ${e.runId}: another writer moved it first` }));
          }
          return target.commit(entries as never);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  // The engine reads runs through the kernel, which preloads them from an asynchronous store.
  let kernel: Kernel | undefined;
  const engine = await scriptlessEngine({ load: (runId) => kernel!.loadForEngine(runId) });
  const gateway = registryGateway({
    tools: {
      charge: async (_input: unknown, ctx: { invocationId: string }) => {
        calls.push(ctx.invocationId);
        return { charged: 1 };
      },
    },
  } as never);
  kernel = new Kernel({
    store: losing as never,
    engine,
    gateway,
    log: (level: string, message: string) => logs.push(`${level} ${message}`),
    authority: () => everything,
    leases: { owner: 'this-process', ttlMs: 10_000, pollMs: 50 },
  });
  const plan = engine.compile({ root: { template: chain('charge-once', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], { requires: ['tool:charge'] }) } });
  return { kernel, store, plan, calls, logs };
}

describe.each([
  ['SQLite', () => join(mkdtempSync(join(tmpdir(), 'adw-late-')), 'workflow.db')],
  ['PostgreSQL', () => pgStore],
])('late receipts (%s)', (_, location) => {
  it.each(['io-error', 'seq-conflict'] as Loss[])('an outcome whose commit lost (%s) reaches the journal through the inbox; the call ran once', async (loss) => {
    const h = await host(location(), loss);
    const runId = `late-${loss}-${Date.now() % 1_000_000}`;
    try {
      await h.kernel.launch({ runId, plan: h.plan, input: {}, authority: everything });
      let record = await h.store.getRun(runId);
      for (let i = 0; i < 200 && record?.status !== 'completed'; i++) {
        await new Promise((r) => setTimeout(r, 25));
        record = await h.store.getRun(runId);
      }
      expect(record?.status, h.logs.join('\n')).toBe('completed');
      const page = await h.store.readEvents(runId, 0, 1000);
      const events = page.events.map((line: string) => JSON.parse(line)).map((e: { type: string; payload: any }) => ({ type: e.type, invocationId: e.payload?.invocationId }));
      const completed = events.filter((e) => e.type === 'capability.completed');
      expect(completed).toEqual([{ type: 'capability.completed', invocationId: h.calls[0] }]);
      expect(h.calls).toHaveLength(1);
    } finally {
      await h.kernel.close?.({ abortInflight: true });
      await h.store.close();
    }
  });
});

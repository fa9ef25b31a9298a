// A trapped component instance is discarded, the host says so, and a fresh one takes over.
import { describe, expect, it } from 'vitest';
import { EngineInstance, EngineTrapError } from '../../dist/hosts/core/engine-instance.js';
import { Kernel } from '../../dist/hosts/core/kernel.js';
import { nodeComponentLoader } from '../../dist/hosts/node/sdk/component.js';
import { SqliteJournalStore } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { chain } from '../helpers/node-host.js';

describe('engine traps', () => {
  it('discards a trapped instance, logs it, and revives a working one', async () => {
    const logged: string[] = [];
    let poisoned = true;
    const engine = await EngineInstance.create(nodeComponentLoader(), {
      load: () => undefined,
      // An import answering with the wrong type makes the canonical ABI trap inside the call.
      evaluateScript: () => (poisoned ? ({ ok: true, output: 42, fuelUsed: 'x' } as any) : { ok: true, output: '7', fuelUsed: 1 }),
      checkScriptSyntax: () => undefined,
      log: (level, message) => logged.push(`${level}: ${message}`),
    });
    const template = chain('trap', [{ id: 'seven', uses: 'core.script@1', config: { source: 'return 7' } }]);
    const plan = engine.compile({ root: { template } });
    const start = (runId: string) => engine.activate({ runId, now: 0, facts: [{ type: 'run-requested', input: {}, authority: { id: 't', scopes: ['*'] } }], plan });
    expect(() => start('run-trap')).toThrow(EngineTrapError);
    expect(engine.dead).toBe(true);
    expect(logged.some((l) => l.startsWith('error: engine: the component trapped in activate'))).toBe(true);
    // A fresh instance is already being built; until it is ready, calls say so.
    expect(() => engine.describe()).toThrow(expect.objectContaining({ code: 'engine.reviving' }));

    poisoned = false;
    await engine.revive();
    expect(engine.dead).toBe(false);
    expect(logged.some((l) => l.includes('re-instantiating the component after a trap'))).toBe(true);
    expect(engine.describe()).toMatchObject({ engineVersion: expect.any(String) });
    const fresh = start('run-after-trap');
    expect(fresh.summary).toMatchObject({ status: 'completed', result: {} });
    expect(fresh.commits).toHaveLength(1);
    expect(fresh.commits[0].plan).toBeInstanceOf(Uint8Array);
  });
});

describe('a trap inside a batch', () => {
  it('fails only the run that trapped; the rest of its batch goes back to the queue and is activated', async () => {
    const logged: string[] = [];
    // The canonical ABI traps when an import answers with the wrong type: only for this script.
    const engine = await EngineInstance.create(nodeComponentLoader(), {
      load: (runId) => store.load(runId),
      evaluateScript: (source) => (source.includes('trap') ? ({ ok: true, output: 42, fuelUsed: 'x' } as any) : { ok: true, output: '7', fuelUsed: 1 }),
      checkScriptSyntax: () => undefined,
      log: (level, message) => logged.push(`${level}: ${message}`),
    });
    const store = SqliteJournalStore.open(':memory:');
    const kernel = new Kernel({
      store,
      engine,
      gateway: { execute: async () => ({ ok: true, output: null }), effects: () => ({}) },
      log: (level, message) => logged.push(`${level}: ${message}`),
      authority: () => ({ id: 't', scopes: ['*'] }),
      flushMode: 'manual',
      timers: false,
    });
    try {
      const plan = (source: string) => engine.compile({ root: { template: chain('batch', [{ id: 's', uses: 'core.script@1', config: { source } }]) } });
      const launch = (runId: string, source: string) => kernel.launch({ runId, plan: plan(source), input: {}, authority: { id: 't', scopes: ['*'] } });
      const before = launch('run-before', 'return 7');
      const trapped = launch('run-trapped', 'return "trap"');
      const after = [launch('run-after-1', 'return 7'), launch('run-after-2', 'return 7')];
      trapped.catch(() => undefined);
      // One flush: one batch of four runs, whose call traps the instance; the runs go back to the
      // queue and are activated one at a time on a fresh instance, where the second traps again.
      expect(await kernel.flush()).toBe(4);
      expect(logged.some((l) => l.startsWith('error: a batch of 4 activations') && l.includes('activated one at a time on a fresh instance'))).toBe(true);
      expect(logged.some((l) => l.startsWith('error: run run-trapped: the engine trapped in activate:'))).toBe(true);
      await expect(trapped).rejects.toBeInstanceOf(EngineTrapError);
      expect(await before).toMatchObject({ status: 'completed' });
      for (const run of after) expect(await run).toMatchObject({ status: 'completed' });
      expect(store.getRun('run-trapped')).toBeUndefined();
      expect(store.listRuns().map((r) => [r.runId, r.status]).sort()).toEqual([
        ['run-after-1', 'completed'],
        ['run-after-2', 'completed'],
        ['run-before', 'completed'],
      ]);
    } finally {
      await kernel.close();
      store.close();
    }
  });
});

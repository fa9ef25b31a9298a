// `activate-batch`: several runs activated in one call into the component. Each outcome must be
// exactly what `activate` gives for that run alone (the same commits byte for byte, the same
// requests, cancels, summaries and refusals), a refused activation must not touch its neighbours,
// and the kernel must use it for a group commit and fall back to single activations for what the
// batch could not do.
import { describe, expect, it } from 'vitest';
import { EngineCallError, EngineInstance, EngineTrapError, type ActivationInput, type BatchOutcome } from '../../dist/hosts/core/engine-instance.js';
import { Kernel } from '../../dist/hosts/core/kernel.js';
import { nodeComponentLoader } from '../../dist/hosts/node/sdk/component.js';
import { SqliteJournalStore } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { sha256Hex } from '../../dist/hosts/shared/digest.js';
import { memoryJournal } from '../helpers/memory-journal.js';
import { chain } from '../helpers/node-host.js';

const decoder = new TextDecoder();
const authority = { id: 'tester', scopes: ['*'] };

async function engineWith(journal: ReturnType<typeof memoryJournal>, evaluate: (source: string) => any = () => ({ ok: true, output: '7', fuelUsed: 1 })) {
  return EngineInstance.create(nodeComponentLoader(), {
    load: (runId) => journal.load(runId),
    evaluateScript: evaluate,
    checkScriptSyntax: () => undefined,
    sha256Hex,
    log: () => undefined,
  });
}

/** What one outcome gave the host, as text: every byte of every commit. */
function describeOutcome(out: BatchOutcome): string[] {
  if (!out.ok) return [`error ${out.error.code} ${out.error.message} ${JSON.stringify(out.error.detail ?? null)}`];
  const lines: string[] = [];
  for (const c of out.commits) {
    lines.push(`commit ${c.runId} ${c.expectedSeq}..${c.lastSeq} ${c.status} plan=${c.plan ? sha256Hex(decoder.decode(c.plan)) : '-'}`);
    lines.push(decoder.decode(c.events));
    if (c.checkpoint) lines.push(`checkpoint ${decoder.decode(c.checkpoint)}`);
  }
  for (const r of out.requests) lines.push(`request ${JSON.stringify(r)}`);
  for (const c of out.cancels) lines.push(`cancel ${c.invocationId} ${c.reason}`);
  lines.push(`summary ${JSON.stringify(out.summary)}`);
  return lines;
}

/** `activate` for each activation in turn, as outcomes. */
function oneByOne(engine: EngineInstance, round: ActivationInput[]): BatchOutcome[] {
  return round.map((a) => {
    try {
      return { ok: true as const, ...engine.activate(a) };
    } catch (err) {
      if (!(err instanceof EngineCallError)) throw err;
      return { ok: false as const, error: err };
    }
  });
}

/**
 * Rounds of activations of distinct runs: new runs sharing one plan, a run nobody launched, a
 * cancelled run, the completions of the calls each round requested, a second launch of an
 * existing run. Each engine goes through them with `drive`; the record is every outcome.
 */
async function scenario(drive: (engine: EngineInstance, round: ActivationInput[]) => BatchOutcome[]) {
  const journal = memoryJournal();
  const engine = await engineWith(journal);
  const template = chain(
    'batch',
    [
      { id: 'a', uses: 'tool.call@1', config: { tool: 'echo' }, inputs: { text: { source: 'input', path: '/text' } } },
      { id: 'b', uses: 'tool.call@1', config: { tool: 'echo' }, inputs: { previous: { source: 'output', nodeId: 'a', path: '' } } },
    ],
    { requires: ['tool:echo'] },
  );
  const plan = engine.compile({ root: { template } });
  const other = engine.compile({ root: { template: chain('batch-other', [{ id: 'only', uses: 'tool.call@1', config: { tool: 'echo' } }], { requires: ['tool:echo'] }) } });
  const record: string[] = [];
  const run = (round: ActivationInput[]) => {
    const outcomes = drive(engine, round);
    expect(outcomes).toHaveLength(round.length);
    for (const out of outcomes) {
      if (out.ok) journal.apply(out.commits);
      record.push(...describeOutcome(out));
    }
    return outcomes;
  };
  const requested = (runId: string) => ({ type: 'run-requested', input: { text: `ünïcödé ${runId}` }, authority });
  let now = 1_700_000_000_000;
  let outcomes = run([
    { runId: 'run-1', now: now++, facts: [requested('run-1')], plan },
    { runId: 'run-ghost', now: now++, facts: [] },
    { runId: 'run-2', now: now++, facts: [requested('run-2')], plan },
    { runId: 'run-3', now: now++, facts: [requested('run-3')], plan: other },
  ]);
  outcomes = run([
    { runId: 'run-3', now: now++, facts: [{ type: 'cancel-requested', reason: 'not needed', by: 'operator:ann' }] },
    { runId: 'run-2', now: now++, facts: [requested('run-2')], plan },
    ...['run-1', 'run-2'].map((runId, i) => {
      const out = outcomes[i === 0 ? 0 : 2];
      return { runId, now: now++, facts: out.ok ? out.requests.map((r) => ({ type: 'capability-completed', invocationId: r.invocationId, ok: true, output: { echoed: r.input } })) : [] };
    }),
  ]);
  for (let i = 0; i < 3 && outcomes.some((o) => o.ok && o.requests.length > 0); i++) {
    outcomes = run(
      outcomes.flatMap((o) => (o.ok && o.requests.length > 0 ? [{ runId: o.summary.runId, now: now++, facts: o.requests.map((r) => ({ type: 'capability-completed', invocationId: r.invocationId, ok: true, output: { echoed: r.input } })) }] : [])),
    );
  }
  return record;
}

describe('activate-batch', () => {
  it('answers for each run exactly what activate answers for it alone', async () => {
    const single = await scenario(oneByOne);
    const batched = await scenario((engine, round) => engine.activateBatch(round));
    expect(batched).toEqual(single);
    // The scenario went through every kind of outcome the batch splits.
    const text = single.join('\n');
    expect(text).toContain('error engine.unknown-run');
    expect(text).toContain('error engine.run-exists');
    expect(single.filter((l) => l.startsWith('commit ') && !l.endsWith('plan=-')).length).toBe(3);
    expect(single.some((l) => l.startsWith('cancel '))).toBe(true);
    expect(single.filter((l) => l.startsWith('request ')).length).toBeGreaterThanOrEqual(4);
    expect(single.filter((l) => l.includes('"type":"run.completed"')).length).toBe(2);
    expect(text).toContain('ünïcödé run-2');
  });

  it('refuses a run alone: its neighbours in the batch are activated and committed', async () => {
    const journal = memoryJournal();
    const engine = await engineWith(journal);
    const plan = engine.compile({ root: { template: chain('refusal', [{ id: 'only', uses: 'tool.call@1', config: { tool: 'echo' } }], { requires: ['tool:echo'] }) } });
    const outcomes = engine.activateBatch([
      { runId: 'run-a', now: 1, facts: [{ type: 'run-requested', input: {}, authority }], plan },
      { runId: 'run-a', now: 2, facts: [{ type: 'no-such-fact' }] },
      { runId: 'run-unknown', now: 3, facts: [{ type: 'cancel-requested', reason: 'x', by: 'operator:ann' }] },
      { runId: 'run-b', now: 4, facts: [{ type: 'run-requested', input: {}, authority }], plan },
    ]);
    expect(outcomes.map((o) => (o.ok ? `ok ${o.summary.runId} ${o.commits.length} ${o.requests.length}` : `err ${o.error.code}`))).toEqual(['ok run-a 1 1', expect.stringMatching(/^err engine\./), 'err engine.unknown-run', 'ok run-b 1 1']);
    // The second run names the plan by its hash; its first commit still carries the plan's bytes.
    const [a, , , b] = outcomes as Extract<BatchOutcome, { ok: true }>[];
    expect(b.commits[0].plan).toEqual(a.commits[0].plan);
    expect(b.requests[0].invocationId).not.toBe(a.requests[0].invocationId);
  });

  it('fails as a whole on a trap, stages nothing, and the fresh instance takes the batch again', async () => {
    const journal = memoryJournal();
    const logged: string[] = [];
    const engine = await EngineInstance.create(nodeComponentLoader(), {
      load: (runId) => journal.load(runId),
      // An import answering with the wrong type makes the canonical ABI trap inside the call.
      evaluateScript: (source) => (source.includes('trap') ? ({ ok: true, output: 42, fuelUsed: 'x' } as any) : { ok: true, output: '7', fuelUsed: 1 }),
      checkScriptSyntax: () => undefined,
      sha256Hex,
      log: (level, message) => logged.push(`${level}: ${message}`),
    });
    const plan = (source: string) => engine.compile({ root: { template: chain('trap', [{ id: 's', uses: 'core.script@1', config: { source } }]) } });
    const start = (runId: string, source: string): ActivationInput => ({ runId, now: 1, facts: [{ type: 'run-requested', input: {}, authority }], plan: plan(source) });
    const batch = [start('run-ok', 'return 7'), start('run-trap', 'return "trap"'), start('run-ok-2', 'return 7')];
    expect(() => engine.activateBatch(batch)).toThrow(EngineTrapError);
    expect(engine.dead).toBe(true);
    expect(logged.some((l) => l.startsWith('error: engine: the component trapped in activateBatch'))).toBe(true);
    await engine.revive();
    const again = engine.activateBatch([batch[0], batch[2]]);
    expect(again.map((o) => o.ok && o.summary.status)).toEqual(['completed', 'completed']);
    // The plans went to the trapped instance only: they cross again, and the commits carry them.
    for (const o of again) expect(o.ok && o.commits[0].plan).toBeInstanceOf(Uint8Array);
  });
});

describe('the kernel and activate-batch', () => {
  type Log = (level: string, message: string) => void;

  /** An engine over a SQLite store in memory; `scripts` makes its sandbox one loaded on first need. */
  function engineOver(store: SqliteJournalStore, log: Log = () => undefined, scripts?: { loaded: boolean; load(): Promise<void> }) {
    return EngineInstance.create(nodeComponentLoader(), {
      load: (runId) => store.loadSync!(runId),
      evaluateScript: () => ({ ok: true, output: '7', fuelUsed: 1 }),
      checkScriptSyntax: () => undefined,
      sha256Hex,
      log,
      ...(scripts ? { scripts } : {}),
    });
  }

  function kernelWith(engine: EngineInstance, store: SqliteJournalStore, log: Log = () => undefined) {
    return new Kernel({
      store,
      engine,
      gateway: { execute: async () => ({ ok: true, output: { fine: true } }), effects: () => ({}) },
      log,
      authority: () => authority,
      flushMode: 'manual',
      timers: false,
    });
  }

  /** Counts the engine's activate and activateBatch calls (with the size of each batch). */
  function counted(engine: EngineInstance) {
    const calls = { single: 0, batches: [] as number[] };
    const activate = engine.activate.bind(engine);
    const activateBatch = engine.activateBatch.bind(engine);
    engine.activate = (a) => {
      calls.single += 1;
      return activate(a);
    };
    engine.activateBatch = (as) => {
      calls.batches.push(as.length);
      return activateBatch(as);
    };
    return calls;
  }

  it('activates a group commit in one call, and refuses the one run the engine refuses', async () => {
    const store = SqliteJournalStore.open(':memory:');
    const engine = await engineOver(store);
    const kernel = kernelWith(engine, store);
    try {
      const plan = engine.compile({ root: { template: chain('kernel-batch', [{ id: 'only', uses: 'tool.call@1', config: { tool: 'echo' } }], { requires: ['tool:echo'] }) } });
      const launch = (runId: string) => kernel.launch({ runId, plan, input: {}, authority });
      // A run that ends in its first activation: nothing of it stays queued.
      const first = kernel.launch({ runId: 'run-existing', plan: engine.compile({ root: { template: chain('at-once', []) } }), input: {}, authority });
      await kernel.flush();
      expect(await first).toMatchObject({ status: 'completed' });
      const calls = counted(engine);
      const runs = ['run-1', 'run-2', 'run-existing', 'run-3'].map(launch);
      runs[2].catch(() => undefined);
      expect(await kernel.flush(4)).toBe(4);
      // One call for the batch; the refused run was tried again alone, and refused again.
      expect(calls.batches).toEqual([4]);
      expect(calls.single).toBe(1);
      await expect(runs[2]).rejects.toMatchObject({ code: 'engine.run-exists' });
      for (const i of [0, 1, 3]) expect(await runs[i]).toMatchObject({ status: 'running' });
      // The tools run, their outcomes come back (one activation each, batched or alone), and the runs end.
      for (let i = 0; i < 200 && store.listRuns().some((r) => r.status !== 'completed'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        await kernel.flush();
      }
      expect(calls.batches.slice(1).reduce((sum, n) => sum + n, 0) + calls.single - 1).toBe(3);
      expect(store.listRuns().map((r) => [r.runId, r.status]).sort()).toEqual([
        ['run-1', 'completed'],
        ['run-2', 'completed'],
        ['run-3', 'completed'],
        ['run-existing', 'completed'],
      ]);
    } finally {
      await kernel.close();
      store.close();
    }
  });

  it('activates alone the runs of a batch whose answer cannot be split, after the engine forgot them', async () => {
    const store = SqliteJournalStore.open(':memory:');
    const logged: string[] = [];
    const log: Log = (level, message) => logged.push(`${level}: ${message}`);
    const engine = await engineOver(store, log);
    const kernel = kernelWith(engine, store, log);
    try {
      // The component answers one outcome too few once: the engine has activated all three runs.
      const exports = (engine as unknown as { exports: { activateBatch(text: string): string } }).exports;
      const activateBatch = exports.activateBatch.bind(exports);
      let broken = 1;
      exports.activateBatch = (text) => {
        const out = activateBatch(text);
        return broken-- > 0 ? out.split('\n').slice(0, -1).join('\n') : out;
      };
      const plan = engine.compile({ root: { template: chain('unsplittable', [{ id: 'only', uses: 'tool.call@1', config: { tool: 'echo' } }], { requires: ['tool:echo'] }) } });
      const runs = ['run-1', 'run-2', 'run-3'].map((runId) => kernel.launch({ runId, plan, input: {}, authority }));
      expect(await kernel.flush(3)).toBe(3);
      // Activated again one at a time from what the journal holds (nothing): new runs, not "already exists".
      for (const run of runs) expect(await run).toMatchObject({ status: 'running', seq: expect.any(Number) });
      expect(logged.some((l) => l.startsWith('warn: a batch of 3 activations failed') && l.includes('engine answered 2 outcomes for a batch of 3'))).toBe(true);
      for (let i = 0; i < 200 && store.listRuns().some((r) => r.status !== 'completed'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        await kernel.flush();
      }
      expect(store.listRuns().map((r) => [r.runId, r.status, r.lastSeq]).sort()).toEqual(
        ['run-1', 'run-2', 'run-3'].map((runId) => [runId, 'completed', store.getRun('run-1')!.lastSeq]),
      );
    } finally {
      await kernel.close();
      store.close();
    }
  });

  it('loads the script sandbox for a run of the batch that needs it, and activates that run alone', async () => {
    const store = SqliteJournalStore.open(':memory:');
    let loads = 0;
    const scripts = {
      loaded: false,
      async load() {
        loads += 1;
        this.loaded = true;
      },
    };
    const engine = await engineOver(store, undefined, scripts);
    const kernel = kernelWith(engine, store);
    try {
      // Plans compiled by another instance, whose sandbox is there: this one's is not loaded yet.
      const compiler = await engineWith(memoryJournal());
      const scripted = compiler.compile({ root: { template: chain('scripted', [{ id: 's', uses: 'core.script@1', config: { source: 'return 7' } }]) } });
      const plain = compiler.compile({ root: { template: chain('plain', [{ id: 'only', uses: 'tool.call@1', config: { tool: 'echo' } }], { requires: ['tool:echo'] }) } });
      const calls = counted(engine);
      const runs = [
        kernel.launch({ runId: 'run-plain-1', plan: plain, input: {}, authority }),
        kernel.launch({ runId: 'run-scripted', plan: scripted, input: {}, authority }),
        kernel.launch({ runId: 'run-plain-2', plan: plain, input: {}, authority }),
      ];
      expect(await kernel.flush(3)).toBe(3);
      expect(loads).toBe(1);
      // The batch took the two plain runs; the scripted one was refused by the batch before it
      // crossed, and activated alone twice: refused again, then after the sandbox was loaded.
      expect(calls.batches).toEqual([3]);
      expect(calls.single).toBe(2);
      expect(await runs[1]).toMatchObject({ status: 'completed', result: {} });
      expect(await runs[0]).toMatchObject({ status: 'running' });
      expect(await runs[2]).toMatchObject({ status: 'running' });
    } finally {
      await kernel.close();
      store.close();
    }
  });
});

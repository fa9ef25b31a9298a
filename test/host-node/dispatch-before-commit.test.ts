// A read-only or idempotent call may start while the commit that records its request is on its
// way; a call whose effect is unknown starts only once its request is durable. The oracle is the
// tool itself: when it starts, it reads the run's journal through a connection of its own and
// records whether its `capability.requested` is already there. A commit that does not land aborts
// an early call, and its outcome reaches no journal. Beside a run's FIRST commit only read-only
// calls start, and only for a run id the runtime drew itself: until that commit is durable the run
// does not exist, and a crash would leave an effect no journal holds.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';

interface Start {
  tool: string;
  invocationId: string;
  /** Whether the run's journal held the call's `capability.requested` when the tool started. */
  requestDurable: boolean;
}

/**
 * Tools that record, at their start, whether their request is in the journal on disk. Those named
 * in `later` answer two turns of the event loop after they start: still in flight when the commit
 * of their request is written (the others answer at once, and a safe one's outcome is folded
 * into that commit).
 */
function observingTools(file: string, starts: Start[], aborted: string[] = [], later: string[] = []) {
  let reader: Database.Database | undefined;
  const requestDurable = (runId: string, invocationId: string): boolean => {
    reader ??= new Database(file, { readonly: true, fileMustExist: true });
    // A row holds a commit's events, one JSON line each (schema v9).
    const rows = reader.prepare('SELECT body FROM events WHERE run_id = ?').all(runId) as { body: Buffer }[];
    return rows.some((r) =>
      Buffer.from(r.body)
        .toString('utf8')
        .split('\n')
        .filter((line) => line.length > 0)
        .some((line) => {
          const e = JSON.parse(line);
          return e.type === 'capability.requested' && e.payload.invocationId === invocationId;
        }),
    );
  };
  const tool = (name: string) => ({
    execute: (_input: unknown, ctx: { runId: string; invocationId: string; signal: AbortSignal }) => {
      starts.push({ tool: name, invocationId: ctx.invocationId, requestDurable: requestDurable(ctx.runId, ctx.invocationId) });
      ctx.signal.addEventListener('abort', () => aborted.push(ctx.invocationId));
      if (later.includes(name)) return new Promise((resolve) => setImmediate(() => setImmediate(() => resolve({ tool: name }))));
      return { tool: name };
    },
  });
  return { tools: { lookup: tool('lookup'), notify: tool('notify'), charge: tool('charge') }, close: () => reader?.close() };
}

/** start -> first (idempotent, in the run's first commit) -> lookup (read-only) -> notify (idempotent) -> charge (effect unknown) -> end. */
const template = chain('early-dispatch', [
  { id: 'first', uses: 'tool.call@1', config: { tool: 'notify', idempotent: true } },
  { id: 'lookup', uses: 'tool.call@1', readOnly: true, config: { tool: 'lookup' } },
  { id: 'notify', uses: 'tool.call@1', config: { tool: 'notify', idempotent: true } },
  { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } },
], { requires: ['tool:lookup', 'tool:notify', 'tool:charge'] });

/**
 * An idempotent notify first (requested in the run's first commit, beside which only read-only
 * calls start), so that what follows is requested after that commit.
 */
const afterFirst = (id: string, nodes: unknown[], requires: string[]) =>
  chain(id, [{ id: 'first', uses: 'tool.call@1', config: { tool: 'notify', idempotent: true } }, ...nodes] as never, { requires: ['tool:lookup', 'tool:notify', ...requires] });

async function journalOf(rt: Awaited<ReturnType<typeof openRuntime>>, runId: string) {
  return (await rt.exportRun(runId)).events as { type: string; payload: { invocationId?: string } }[];
}

type Entry = { runId: string; expectedSeq: number; events: Uint8Array };
type Commit = (entries: Entry[]) => unknown;

/** The types of the events a store entry holds, in order. */
const eventTypes = (e: Entry): string[] =>
  new TextDecoder()
    .decode(e.events)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l).type as string);

/** A store commit wrapper that notes what each commit held (per entry, its event types), and the notes. */
function recordingCommits(): { commits: string[][][]; commit: (entries: Entry[], next: Commit) => unknown } {
  const commits: string[][][] = [];
  return {
    commits,
    commit: (entries, next) => {
      commits.push(entries.map(eventTypes));
      return next(entries);
    },
  };
}

/**
 * `fn` with a fresh runtime whose tools observe their start (`observingTools`, `later` answering
 * two turns late), every store commit handed to `commit` first, which writes it with `next` or
 * throws; closed after `fn`.
 */
async function observed(
  options: { commit?: (entries: Entry[], next: Commit) => unknown; later?: string[]; adjust?: (tools: ReturnType<typeof observingTools>['tools']) => Record<string, unknown> },
  fn: (o: { rt: Awaited<ReturnType<typeof openRuntime>>; starts: Start[]; aborted: string[] }) => Promise<void>,
): Promise<void> {
  const dir = tempDir();
  const starts: Start[] = [];
  const aborted: string[] = [];
  const tools = observingTools(join(dir, 'workflow.db'), starts, aborted, options.later);
  const rt = await openRuntime({ dir, tools: (options.adjust ?? ((t) => t))(tools.tools) as never });
  const store = (rt as any).store;
  const next: Commit = store.commit.bind(store);
  if (options.commit) store.commit = (entries: Entry[]) => options.commit!(entries, next);
  try {
    await fn({ rt, starts, aborted });
  } finally {
    tools.close();
    await rt.close();
  }
}

/** Runs `t` to its end on a fresh runtime whose tools observe their start: what each saw, and the journal. */
async function observe(t: unknown, options: { dispatchBeforeCommit?: boolean } = {}, adjust = (tools: ReturnType<typeof observingTools>['tools']): Record<string, unknown> => tools) {
  const dir = tempDir();
  const starts: Start[] = [];
  const tools = observingTools(join(dir, 'workflow.db'), starts);
  const rt = await openRuntime({ dir, tools: adjust(tools.tools) as never, ...options });
  try {
    const handle = await rt.launch(t as never, { input: {} });
    expect((await handle.result).status).toBe('completed');
    return { starts, events: await journalOf(rt, handle.runId) };
  } finally {
    tools.close();
    await rt.close();
  }
}

describe('calls started beside their commit', () => {
  it('starts read-only and idempotent calls before their request is durable, and a call of unknown effect only after', async () => {
    const { starts, events } = await observe(template);
    expect(starts.map((s) => [s.tool, s.requestDurable])).toEqual([
      ['notify', true],
      ['lookup', false],
      ['notify', false],
      ['charge', true],
    ]);
    // Each call is journaled once, requested before it completed, whatever order it started in.
    for (const s of starts) {
      const requested = events.findIndex((e) => e.type === 'capability.requested' && e.payload.invocationId === s.invocationId);
      const completed = events.findIndex((e) => e.type === 'capability.completed' && e.payload.invocationId === s.invocationId);
      expect(requested).toBeGreaterThanOrEqual(0);
      expect(completed).toBeGreaterThan(requested);
      expect(events.filter((e) => e.type === 'capability.completed' && e.payload.invocationId === s.invocationId)).toHaveLength(1);
    }
  });

  it('starts every call after its commit with dispatchBeforeCommit: false', async () => {
    const { starts } = await observe(template, { dispatchBeforeCommit: false });
    expect(starts.map((s) => [s.tool, s.requestDurable])).toEqual([
      ['notify', true],
      ['lookup', true],
      ['notify', true],
      ['charge', true],
    ]);
  });

  it('refuses a dispatchBeforeCommit that is not a boolean', async () => {
    await expect(openRuntime({ dispatchBeforeCommit: 'no' as never })).rejects.toMatchObject({ code: 'host.bad-option', message: expect.stringContaining('dispatchBeforeCommit') });
  });

  it('counts a tool the gateway declares idempotent as safe to start early', async () => {
    const declared = afterFirst('declared', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], ['tool:charge']);
    const { starts } = await observe(declared, {}, (tools) => ({ ...tools, charge: { ...tools.charge, idempotent: true } }));
    expect(starts.map((s) => [s.tool, s.requestDurable])).toEqual([
      ['notify', true],
      ['charge', false],
    ]);
  });

  it('starts a read-only call beside the first commit of a run whose id it drew, and folds its outcome into that commit; none for a run id the caller named', async () => {
    const { commits, commit } = recordingCommits();
    await observed({ commit }, async ({ rt, starts }) => {
      const t = chain('first-read-only', [{ id: 'first', uses: 'tool.call@1', readOnly: true, config: { tool: 'lookup' } }, { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], { requires: ['tool:lookup', 'tool:charge'] });
      const drawn = await rt.launch(t, { input: {} });
      expect((await drawn.result).status).toBe('completed');
      expect(starts.map((s) => [s.tool, s.requestDurable])).toEqual([
        ['lookup', false],
        ['charge', true],
      ]);
      // One transaction, one entry: the run's first activation (the lookup's request) and the
      // next (its outcome, the charge's request); the charge's outcome after it.
      expect(commits.map((c) => c.map((types) => types.filter((x) => x.startsWith('capability.')).join('+')))).toEqual([
        ['capability.requested+capability.completed+capability.requested'],
        ['capability.completed'],
      ]);
      expect(commits[0][0]).toContain('run.started');
      // A run id its caller names may already be taken: the first commit is durable before anything starts.
      starts.length = 0;
      const named = await rt.launch(t, { input: {}, runId: 'named-run' });
      expect((await named.result).status).toBe('completed');
      expect(starts.map((s) => [s.tool, s.requestDurable])).toEqual([
        ['lookup', true],
        ['charge', true],
      ]);
    });
  });

  it('answers the outcome of a run that ended within its first commit as the store tells it, without reading it back', async () => {
    for (const capture of ['replayable', 'metadata'] as const) {
      const dir = tempDir();
      const rt = await openRuntime({ dir, capture: { mode: capture }, tools: { lookup: { readOnly: true, execute: (input: unknown) => ({ looked: input }) } } as never });
      try {
        const t = chain('ends-at-once', [{ id: 'first', uses: 'tool.call@1', readOnly: true, config: { tool: 'lookup' }, inputs: { q: { source: 'input', path: '/q' } } }], { requires: ['tool:lookup'], outputs: { found: { source: 'output', nodeId: 'first' } } });
        const store = (rt as any).store;
        const getRun = store.getRun.bind(store);
        let reads = 0;
        store.getRun = (runId: string) => (reads++, getRun(runId));
        const handle = await rt.launch(t, { input: { q: 'x' } });
        const outcome = await handle.result;
        expect(await handle.settled()).toBe(outcome);
        expect(reads).toBe(0);
        // The same outcome as a process that follows the run through the store.
        expect(outcome).toStrictEqual(await rt.follow(handle.runId).result);
        expect(reads).toBeGreaterThan(0);
        expect(outcome).toMatchObject({ runId: handle.runId, status: 'completed' });
        if (capture === 'replayable') expect(outcome.output).toEqual({ found: { looked: { q: 'x' } } });
        else expect(outcome).not.toHaveProperty('output');
      } finally {
        await rt.close();
      }
    }
  });

  it('drops the outcome of a read-only call started beside a first commit that fails: the launch fails and no run exists', async () => {
    let failed = 0;
    const commit = (entries: Entry[], next: Commit) => {
      if (failed === 0 && entries.some((e) => e.expectedSeq === 0)) {
        failed++;
        throw Object.assign(new Error('the process died before its first commit was durable'), { code: 'store.io' });
      }
      return next(entries);
    };
    await observed({ commit }, async ({ rt, starts }) => {
      const t = chain('first-read-only-fails', [{ id: 'first', uses: 'tool.call@1', readOnly: true, config: { tool: 'lookup' } }], { requires: ['tool:lookup'] });
      await expect(rt.launch(t, { input: {} })).rejects.toMatchObject({ code: 'store.io' });
      expect(failed).toBe(1);
      // The lookup ran (it changes nothing); no journal holds it, and no run exists.
      expect(starts.map((s) => [s.tool, s.requestDurable])).toEqual([['lookup', false]]);
      expect(await rt.listRuns()).toEqual([]);
    });
  });

  it('starts no call beside a run\'s first commit: when that commit fails, no tool ran and no run exists', async () => {
    let failed = 0;
    // The first commit of the run (the crash of a process before it was durable, as seen from here).
    const commit = async (entries: Entry[], next: Commit) => {
      if (failed === 0 && entries.some((e) => e.expectedSeq === 0)) {
        failed++;
        await new Promise((r) => setTimeout(r, 50));
        throw Object.assign(new Error('the process died before its first commit was durable'), { code: 'store.io' });
      }
      return next(entries);
    };
    await observed({ commit, adjust: (tools) => ({ ...tools, charge: { ...tools.charge, idempotent: true } }) }, async ({ rt, starts }) => {
      const idempotentFirst = chain('first-commit', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge', idempotent: true } }], { requires: ['tool:charge'] });
      await expect(rt.launch(idempotentFirst, { input: {} })).rejects.toMatchObject({ code: 'store.io' });
      expect(failed).toBe(1);
      await new Promise((r) => setTimeout(r, 50));
      expect(starts).toEqual([]);
    });
  });

  it('aborts an early call whose commit fails, and journals no outcome of it', async () => {
    let failed = 0;
    // The commit that holds the second read-only call's request fails once, after the call has started.
    const commit = (entries: Entry[], next: Commit) => {
      if (failed === 0 && entries.some((e) => e.expectedSeq > 0 && new TextDecoder().decode(e.events).includes('"capability.requested"'))) {
        failed++;
        throw Object.assign(new Error('disk full'), { code: 'store.io' });
      }
      return next(entries);
    };
    // The lookup answers two turns later: still running when its commit fails.
    await observed({ commit, later: ['lookup'] }, async ({ rt, starts, aborted }) => {
      const lookupOnly = afterFirst('early-fails', [{ id: 'second', uses: 'tool.call@1', readOnly: true, config: { tool: 'lookup' } }], []);
      const failing = await rt.launch(lookupOnly, { input: {} });
      for (let i = 0; i < 100 && aborted.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(failed).toBe(1);
      expect(starts.map((s) => [s.tool, s.requestDurable])).toEqual([
        ['notify', true],
        ['lookup', false],
      ]);
      expect(aborted).toEqual([starts[1].invocationId]);
      // The aborted call's outcome reached no journal, not even as late evidence (it answers after its abort).
      await new Promise((r) => setTimeout(r, 50));
      expect((await journalOf(rt, failing.runId)).filter((e) => e.payload.invocationId === starts[1].invocationId)).toEqual([]);
      const handle = await rt.launch(lookupOnly, { input: {} });
      expect((await handle.result).status).toBe('completed');
      expect(starts).toHaveLength(4);
      expect((await journalOf(rt, handle.runId)).filter((e) => e.type === 'capability.completed')).toHaveLength(2);
    });
  });

  it('folds the outcome of a safe call that answered at once into the commit of its request', async () => {
    const { commits, commit } = recordingCommits();
    await observed({ commit }, async ({ rt, starts }) => {
      const t = afterFirst('folded', [{ id: 'second', uses: 'tool.call@1', readOnly: true, config: { tool: 'lookup' } }, { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], ['tool:charge']);
      const handle = await rt.launch(t, { input: {} });
      expect((await handle.result).status).toBe('completed');
      const second = starts[1].invocationId;
      expect(starts.map((s) => [s.tool, s.requestDurable])).toEqual([
        ['notify', true],
        ['lookup', false],
        ['charge', true],
      ]);
      // The run's first commit; the first call's outcome with the second call's request, folded
      // with the second call's outcome and the charge's request (effect unknown: the fold ends
      // there, and the charge starts once that commit is durable) into one entry; the charge's outcome.
      expect(commits.map((c) => c.map((types) => types.filter((x) => x.startsWith('capability.')).join('+')))).toEqual([
        ['capability.requested'],
        ['capability.completed+capability.requested+capability.completed+capability.requested'],
        ['capability.completed'],
      ]);
      const events = await journalOf(rt, handle.runId);
      expect(events.filter((e) => e.payload.invocationId === second).map((e) => e.type)).toEqual(['capability.requested', 'capability.completed']);
    });
  });

  it('journals neither request nor outcome of a folded call when that commit fails, and the run goes on from the journal', async () => {
    let failed = 0;
    // The commit that folds the second call's request and outcome (two activations of one run) fails once.
    const commit = (entries: Entry[], next: Commit) => {
      if (failed === 0 && entries.some((e) => eventTypes(e).filter((t) => t === 'capability.completed').length === 2)) {
        failed++;
        throw Object.assign(new Error('disk full'), { code: 'store.io' });
      }
      return next(entries);
    };
    await observed({ commit }, async ({ rt, starts }) => {
      const t = afterFirst('folded-fails', [{ id: 'second', uses: 'tool.call@1', readOnly: true, config: { tool: 'lookup' } }], []);
      const failing = await rt.launch(t, { input: {} });
      for (let i = 0; i < 100 && failed === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(failed).toBe(1);
      const second = starts[1].invocationId;
      // Nothing of the folded commit reached the journal: the run is where its first commit left it.
      const before = await journalOf(rt, failing.runId);
      expect(before.filter((e) => e.payload.invocationId === second)).toEqual([]);
      expect(before.map((e) => e.type)).not.toContain('capability.completed');
      // Resumed, it goes on from the journal: the first call (idempotent, in flight there) is asked again.
      const resumed = await rt.resume(failing.runId);
      expect((await resumed.result).status).toBe('completed');
      const after = await journalOf(rt, failing.runId);
      expect(after.filter((e) => e.type === 'capability.completed')).toHaveLength(2);
      expect(after.filter((e) => e.type === 'capability.requested' && e.payload.invocationId === second)).toHaveLength(1);
    });
  });
});

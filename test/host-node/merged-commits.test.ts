// A fold's activations of one run go to the store as one entry (`mergedCommits`): the store checks
// the run's sequence and writes its row once. What the journal holds must not change: the same
// events, in order, as a runtime that folds nothing writes; a run reloaded cold from a merged
// journal replays and resumes like any other.
import { describe, expect, it } from 'vitest';
import { mergedCommits } from '../../dist/hosts/core/kernel-scheduler.js';
import type { CommitEntry } from '../../dist/hosts/core/store.js';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, tempDir } from '../helpers/node-host.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const usage = { inputTokens: 1, outputTokens: 1 };

/** A ten-turn agent with two read-only tool calls a turn, whose model and tools answer at once. */
const turns = 10;
const agentTemplate = chain('merged', [{ id: 'agent', uses: 'agent.run@1', config: { model: 'fake', tools: ['lookup'], maxTurns: turns + 1 } }], {
  requires: ['model:fake', 'tool:lookup'],
  outputs: { a: { source: 'output', nodeId: 'agent' } },
});

function options(dir: string, extra: Record<string, unknown> = {}) {
  return {
    dir,
    log: () => undefined,
    tools: { lookup: { readOnly: true, execute: (input: unknown) => ({ looked: input }) } },
    models: {
      fake: {
        generate: (r: { turn: number }) =>
          r.turn < turns ? { toolCalls: [0, 1].map((i) => ({ id: `c${r.turn}-${i}`, name: 'lookup', input: { q: `${r.turn}-${i}` } })), usage, finishReason: 'tool-calls' } : { text: 'done', toolCalls: [], usage, finishReason: 'stop' },
      },
    },
    ...extra,
  } as never;
}

/** The journal as a comparable list: type, seq, node and payload of every event (ids and times differ per run). */
const shape = (events: { type: string; seq: number; node?: { id: string }; payload: Record<string, unknown> }[]) =>
  events.map((e) => ({ type: e.type, seq: e.seq, node: e.node?.id, payload: { ...e.payload, invocationId: undefined } }));

describe('folded activations written as one entry', () => {
  it('journal the same events as a runtime that folds nothing, in fewer entries, and reload cold', async () => {
    const dir = tempDir();
    const rt = await WorkflowRuntime.open(options(dir));
    const store = (rt as any).store;
    const write = store.commit.bind(store);
    const entries: { expectedSeq: number; lastSeq: number; lines: number }[] = [];
    store.commit = (batch: CommitEntry[]) => {
      for (const e of batch) entries.push({ expectedSeq: e.expectedSeq, lastSeq: e.lastSeq, lines: decoder.decode(e.events).split('\n').length });
      return write(batch);
    };
    const handle = await rt.launch({ type: 'inline', template: agentTemplate }, { input: 'q' });
    expect((await handle.result).status).toBe('completed');
    const merged = (await rt.exportRun(handle.runId)).events as never[];
    await rt.close();
    // Twenty activations, at most sixteen folded into a commit: two commits, one entry each, every
    // entry continuing the one before and holding exactly its seqs.
    expect(entries).toHaveLength(2);
    expect(entries[0].expectedSeq).toBe(0);
    expect(entries[1].expectedSeq).toBe(entries[0].lastSeq);
    for (const e of entries) expect(e.lines).toBe(e.lastSeq - e.expectedSeq);

    const unfolded = await WorkflowRuntime.open(options(tempDir(), { dispatchBeforeCommit: false }));
    const plain = await unfolded.launch({ type: 'inline', template: agentTemplate }, { input: 'q' });
    expect((await plain.result).status).toBe('completed');
    expect(shape(merged)).toEqual(shape((await unfolded.exportRun(plain.runId)).events as never[]));
    await unfolded.close();

    // Another process reads the merged journal back: recorded replay reproduces it, and its outcome is the store's.
    const cold = await WorkflowRuntime.open(options(dir));
    try {
      expect((await cold.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
      expect(await cold.follow(handle.runId).result).toMatchObject({ status: 'completed', output: { a: 'done' } });
    } finally {
      await cold.close();
    }
  });
});

describe('mergedCommits', () => {
  const entry = (runId: string, expectedSeq: number, lastSeq: number, extra: Partial<CommitEntry> = {}): CommitEntry => ({
    runId,
    expectedSeq,
    lastSeq,
    events: encoder.encode(Array.from({ length: lastSeq - expectedSeq }, (_, i) => `{"seq":${expectedSeq + 1 + i}}`).join('\n')),
    status: 'running',
    ...extra,
  });
  const view = (es: CommitEntry[]) => es.map((e) => `${e.runId} ${e.expectedSeq}..${e.lastSeq} ${decoder.decode(e.events).replace(/\n/g, '|')}${e.checkpoint ? ' cp' : ''}${e.plan ? ' plan' : ''} ${e.status}`);

  it('joins consecutive commits of a run, keeping the first plan and the last state', () => {
    const plan = encoder.encode('{}');
    const out = mergedCommits([entry('r', 0, 2, { plan }), entry('r', 2, 3), entry('r', 3, 4, { status: 'completed', checkpoint: encoder.encode('{"seq":4}') })]);
    expect(view(out)).toEqual(['r 0..4 {"seq":1}|{"seq":2}|{"seq":3}|{"seq":4} cp plan completed']);
  });

  it('ends a group at a checkpoint, at a gap, at another run, and before the bound on a commit\'s events', () => {
    const checkpoint = encoder.encode('{}');
    expect(view(mergedCommits([entry('r', 0, 1, { checkpoint }), entry('r', 1, 2)]))).toEqual(['r 0..1 {"seq":1} cp running', 'r 1..2 {"seq":2} running']);
    expect(view(mergedCommits([entry('r', 0, 1), entry('r', 2, 3)]))).toEqual(['r 0..1 {"seq":1} running', 'r 2..3 {"seq":3} running']);
    expect(view(mergedCommits([entry('r', 0, 1), entry('s', 1, 2)]))).toEqual(['r 0..1 {"seq":1} running', 's 1..2 {"seq":2} running']);
    // Each event is 9 bytes: two fit in 19 with their newline, three do not.
    expect(view(mergedCommits([entry('r', 0, 1), entry('r', 1, 2), entry('r', 2, 3)], 19))).toEqual(['r 0..2 {"seq":1}|{"seq":2} running', 'r 2..3 {"seq":3} running']);
  });
});

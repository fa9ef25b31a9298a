// LangGraph JS with its SQLite checkpointer (better-sqlite3 12, WAL).
// `makeLangGraph({ durability })` builds the module; the default export uses LangGraph's default
// durability mode ("async": a step's checkpoint is written while the next step runs).
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { importPeer, peerVersion } from '../lib/util.mjs';

export function makeLangGraph({ durability = 'async', name = 'langgraph' } = {}) {
  let lg, saver, dir, graphs, seq = 0, syncMode = '?';

  async function init(baseDir) {
    lg = await importPeer('@langchain/langgraph');
    const { SqliteSaver } = await importPeer('@langchain/langgraph-checkpoint-sqlite');
    dir = baseDir ?? mkdtempSync(join(tmpdir(), 'bench-langgraph-'));
    saver = SqliteSaver.fromConnString(join(dir, 'checkpoints.sqlite'));
    saver.setup();
    syncMode = ['OFF', 'NORMAL', 'FULL', 'EXTRA'][saver.db.pragma('synchronous', { simple: true })] ?? '?';
    graphs = {};
  }

  function chain(steps) {
    const { Annotation, StateGraph, START, END } = lg;
    const State = Annotation.Root({ n: Annotation() });
    let g = new StateGraph(State);
    for (let i = 0; i < steps; i++) g = g.addNode(`s${i}`, async () => ({ n: i }));
    g = g.addEdge(START, 's0');
    for (let i = 1; i < steps; i++) g = g.addEdge(`s${i - 1}`, `s${i}`);
    g = g.addEdge(`s${steps - 1}`, END);
    return g.compile({ checkpointer: saver });
  }

  function fan() {
    const { Annotation, StateGraph, START, END, Send } = lg;
    const State = Annotation.Root({
      items: Annotation(),
      done: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
    });
    return new StateGraph(State)
      .addNode('item', async () => ({ done: 1 }))
      .addConditionalEdges(START, (s) => Array.from({ length: s.items }, (_, i) => new Send('item', { i })))
      .addEdge('item', END)
      .compile({ checkpointer: saver });
  }

  const cfg = (extra = {}) => ({ configurable: { thread_id: `t${process.pid}-${++seq}` }, durability, ...extra });
  const get = (key, make) => (graphs[key] ??= make());

  async function twoStep() {
    await get('two', () => chain(2)).invoke({ n: 0 }, cfg());
  }

  return {
    name,
    kind: 'peer',
    get version() {
      try { return `@langchain/langgraph ${peerVersion('@langchain/langgraph')}, checkpoint-sqlite ${peerVersion('@langchain/langgraph-checkpoint-sqlite')}, better-sqlite3 ${peerVersion('better-sqlite3')}`; } catch (e) { return `not installed`; }
    },
    get durability() {
      return `SqliteSaver, durability "${durability}"${durability === 'async' ? ' (default)' : ''}; SQLite WAL, synchronous=${syncMode}`;
    },
    notes: {
      fanOut1000: 'Send API: one superstep of 1,000 tasks, maxConcurrency 10',
      foreach10k: 'Send API: one superstep of 10,000 tasks, maxConcurrency 10',
      coldStart: 'fresh process: import LangGraph + checkpointer, open SQLite, compile graph, first 2-step run',
    },
    na: {
      replay10k: 'no event replay: a checkpoint restores state directly; time travel resumes from a checkpoint without re-executing history',
    },
    async setup(ctx) {
      await init(ctx.tmpDir);
    },
    async teardown() {
      try { saver?.db?.close(); } catch { /* ignore */ }
    },
    workloads: {
      twoStep,
      async hundredStep({ steps }) {
        await get(`chain${steps}`, () => chain(steps)).invoke({ n: 0 }, cfg({ recursionLimit: steps + 10 }));
      },
      async fanOut1000({ items, concurrency }) {
        const r = await get('fan', fan).invoke({ items }, cfg({ maxConcurrency: concurrency }));
        if (r.done !== items) throw new Error(`fan-out finished ${r.done}/${items}`);
      },
      async foreach10k({ items, concurrency }) {
        const r = await get('fan', fan).invoke({ items }, cfg({ maxConcurrency: concurrency }));
        if (r.done !== items) throw new Error(`foreach finished ${r.done}/${items}`);
      },
      async coldStart(ctx) {
        const t0 = performance.now();
        await init(ctx.tmpDir);
        await twoStep();
        const ms = performance.now() - t0;
        saver.db.close();
        return { ms };
      },
    },
  };
}

export default makeLangGraph();

// The product: the engine component driven by the Node host, SQLite in WAL mode with
// synchronous=FULL (an fsync at every commit), group commit across activations.
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fanOut, sequence } from '../lib/templates.mjs';

const root = new URL('../../', import.meta.url);
const dist = (p) => new URL(`dist/${p}`, root).href;

let runtime;
const templates = new Map();
let recorded;

/** The template of a workload, built once: a user keeps the template object, not a plan. */
function templateFor(key, build) {
  if (!templates.has(key)) templates.set(key, build());
  return templates.get(key);
}

/** Launches from the template, as the README tells users to (the runtime's plan cache does the rest). */
async function runTemplate(template, input) {
  const handle = await runtime.launch(template, { input });
  const outcome = await handle.result;
  if (outcome.status !== 'completed') throw new Error(`run ${handle.runId} ${outcome.status}: ${JSON.stringify(outcome.error)}`);
  return handle.runId;
}

async function openRuntime(tmpDir) {
  const { WorkflowRuntime } = await import(dist('hosts/node/index.js'));
  return WorkflowRuntime.open({ dir: mkdtempSync(join(tmpDir, 'adw-')), tools: { noop: { execute: () => null } }, log: () => undefined });
}

export default {
  name: 'agent-dag-workflow',
  kind: 'product',
  get version() {
    return JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).version;
  },
  durability: 'SQLite WAL, synchronous=FULL (fsync per commit), group commit',
  notes: {
    twoStep: 'runtime.launch(template) of two tool.call@1 nodes with a no-op tool that is not idempotent; each step commits capability.requested before the tool runs',
    fanOut1000: 'core.foreach@1 over tool.call@1, maxConcurrency 10',
    replay10k: 'runtime.replay(runId, { mode: "recorded" }) of a foreach run (~10,000 events), as the README calls it: the journal read from the SQLite store and replayed by the component, no gateway',
    coldStart: 'new process to the first completed 2-step run: import, WorkflowRuntime.open (engine component, SQLite), launch(template)',
  },
  async setup(ctx) {
    runtime = await openRuntime(ctx.tmpDir);
  },
  async teardown() {
    await runtime?.close();
  },
  workloads: {
    async twoStep() {
      await runTemplate(templateFor('two', () => sequence('two-step', 2)), {});
    },
    async hundredStep({ steps }) {
      await runTemplate(templateFor(`seq${steps}`, () => sequence('hundred-step', steps)), {});
    },
    async fanOut1000({ items, concurrency }) {
      await runTemplate(templateFor(`fan${items}x${concurrency}`, () => fanOut('fan-out', concurrency, items)), { items: Array.from({ length: items }, (_, i) => i) });
    },
    async foreach10k({ items, concurrency }) {
      await runTemplate(templateFor(`each${items}x${concurrency}`, () => fanOut('foreach', concurrency, items)), { items: Array.from({ length: items }, (_, i) => i) });
    },
    async replay10k({ events }) {
      if (!recorded) {
        // Each foreach item writes 4 events (item-started, requested, completed, item-committed).
        const items = Math.ceil(events / 4);
        const runId = await runTemplate(fanOut('replay-source', 16, items), { items: Array.from({ length: items }, (_, i) => i) });
        recorded = { runId, events: (await runtime.getRun(runId)).lastSeq };
      }
      // As the README calls it: the journal is read from the store and replayed by the component.
      const t0 = performance.now();
      const report = await runtime.replay(recorded.runId, { mode: 'recorded' });
      const ms = performance.now() - t0;
      if (report.identical !== true) throw new Error('recorded replay diverged');
      return { ms, events: recorded.events };
    },
    async coldStart(ctx) {
      // Like every system's: from the workload's start to the first completed run (bench/lib/child.mjs
      // adds the process's start before it), with where the time went: Node's own start and the
      // child's, importing the package, opening the runtime (engine component and SQLite), the first run.
      const t0 = performance.now();
      await import(dist('hosts/node/index.js'));
      const t1 = performance.now();
      const rt = await openRuntime(ctx.tmpDir);
      const t2 = performance.now();
      await rt.launch(sequence('cold', 2), { input: {} }).then((h) => h.result);
      const done = performance.now();
      await rt.close();
      return { ms: done - t0, extra: { phasesMs: { start: t0, import: t1 - t0, open: t2 - t1, firstRun: done - t2 } } };
    },
  },
};

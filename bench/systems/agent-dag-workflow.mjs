// The product: the engine component driven by the Node host, SQLite in WAL mode with
// synchronous=FULL (an fsync at every commit), group commit across activations.
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../../', import.meta.url);
const dist = (p) => new URL(`dist/${p}`, root).href;
const api = 'workflow.gm-hz.dev/v1alpha1';

function sequence(id, steps) {
  const nodes = [{ id: 'start', uses: 'core.start@1' }];
  for (let i = 1; i <= steps; i++) nodes.push({ id: `s${i}`, uses: 'tool.call@1', config: { tool: 'noop', idempotent: true } });
  nodes.push({ id: 'end', uses: 'core.end@1' });
  const edges = nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id }));
  return { apiVersion: api, kind: 'WorkflowTemplate', metadata: { id }, spec: { requires: ['tool:noop'], nodes, edges } };
}

function fanOut(id, concurrency, maxItems) {
  return {
    apiVersion: api,
    kind: 'WorkflowTemplate',
    metadata: { id },
    spec: {
      requires: ['tool:noop'],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'each', uses: 'core.foreach@1', config: { maxItems, maxConcurrency: concurrency, body: { uses: 'tool.call@1', config: { tool: 'noop', idempotent: true } } }, inputs: { items: { source: 'input', path: '/items' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'end' },
      ],
    },
  };
}

let runtime;
const plans = new Map();
let recorded;

async function planFor(key, template) {
  if (!plans.has(key)) plans.set(key, runtime.compile(template));
  return plans.get(key);
}

async function runPlan(key, template, input) {
  const plan = await planFor(key, template);
  const handle = await runtime.launch({ type: 'plan', plan }, { input });
  const outcome = await handle.result;
  if (outcome.status !== 'completed') throw new Error(`run ${handle.runId} ${outcome.status}: ${JSON.stringify(outcome.error)}`);
  return handle.runId;
}

export default {
  name: 'agent-dag-workflow',
  kind: 'product',
  get version() {
    return JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).version;
  },
  durability: 'SQLite WAL, synchronous=FULL (fsync per commit), group commit',
  notes: {
    twoStep: 'two tool.call@1 nodes with a no-op tool; each step commits capability.requested before the tool runs',
    fanOut1000: 'core.foreach@1 over tool.call@1, maxConcurrency 10',
    replay10k: 'recorded replay of a foreach run (~10,000 events) by the component, no gateway',
    coldStart: 'compile + instantiate the engine component (EngineInstance.create)',
  },
  async setup(ctx) {
    const { WorkflowRuntime } = await import(dist('hosts/node/index.js'));
    runtime = await WorkflowRuntime.open({ dir: mkdtempSync(join(ctx.tmpDir, 'adw-')), tools: { noop: { idempotent: true, execute: () => null } }, log: () => undefined });
  },
  async teardown() {
    await runtime?.close();
  },
  workloads: {
    async twoStep() {
      await runPlan('two', sequence('two-step', 2), {});
    },
    async hundredStep({ steps }) {
      await runPlan(`seq${steps}`, sequence('hundred-step', steps), {});
    },
    async fanOut1000({ items, concurrency }) {
      await runPlan(`fan${items}x${concurrency}`, fanOut('fan-out', concurrency, items), { items: Array.from({ length: items }, (_, i) => i) });
    },
    async foreach10k({ items, concurrency }) {
      await runPlan(`fan${items}x${concurrency}`, fanOut('foreach', concurrency, items), { items: Array.from({ length: items }, (_, i) => i) });
    },
    async replay10k({ events }) {
      if (!recorded) {
        // Each foreach item writes 4 events (item-started, requested, completed, item-committed).
        const items = Math.ceil(events / 4);
        const runId = await runPlan(`fan${items}x16`, fanOut('replay-source', 16, items), { items: Array.from({ length: items }, (_, i) => i) });
        recorded = await runtime.exportRun(runId);
      }
      const t0 = performance.now();
      const report = runtime.engine.replay({ mode: 'recorded', plan: recorded.plan, events: recorded.events });
      const ms = performance.now() - t0;
      if (report.identical !== true) throw new Error('recorded replay diverged');
      return { ms, events: recorded.events.length };
    },
    async coldStart() {
      const { EngineInstance } = await import(dist('hosts/core/engine-instance.js'));
      const { nodeComponentLoader } = await import(dist('hosts/node/component.js'));
      const t0 = performance.now();
      const engine = await EngineInstance.create(nodeComponentLoader(), {
        load: () => undefined,
        evaluateScript: () => ({ ok: false, error: { code: 'script.unavailable', message: 'no sandbox in this measurement' } }),
        checkScriptSyntax: () => undefined,
        log: () => undefined,
      });
      const ms = performance.now() - t0;
      engine.describe();
      return { ms };
    },
  },
};

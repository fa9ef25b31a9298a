// The workflows, tools and runs the crash matrix drives. Tools are deterministic functions of
// their input and append one line per execution to a side-effect log, so a parent process can
// count how often each invocation really ran, whatever happened to the process that ran it.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

const api = 'workflow.gm-hz.dev/v1alpha1';
const out = (nodeId, path) => ({ source: 'output', nodeId, ...(path !== undefined ? { path } : {}) });

/** start -> charge (unknown effect) -> lookup (read-only node) -> score (script) -> check -> notify (idempotent) | waive (script) -> end (join). */
export const ordersTemplate = {
  apiVersion: api,
  kind: 'WorkflowTemplate',
  metadata: { id: 'orders' },
  spec: {
    requires: ['tool:*'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' }, inputs: { amount: { source: 'input', path: '/amount' } } },
      { id: 'lookup', uses: 'tool.call@1', readOnly: true, config: { tool: 'lookup' }, inputs: { amount: out('charge', '/value/amount') } },
      { id: 'score', uses: 'core.script@1', config: { source: 'return { score: input.l.value.amount % 10 }' }, inputs: { l: out('lookup') } },
      { id: 'check', uses: 'core.condition@1', config: { operator: 'gt' }, inputs: { left: out('score', '/score'), right: { source: 'literal', value: 4 } } },
      { id: 'notify', uses: 'tool.call@1', config: { tool: 'notify', idempotent: true }, inputs: { score: out('score', '/score') } },
      { id: 'waive', uses: 'core.script@1', config: { source: 'return { waived: input.s }' }, inputs: { s: out('score', '/score') } },
      { id: 'end', uses: 'core.end@1', inputs: { charge: out('charge'), notify: out('notify'), waive: out('waive') } },
    ],
    edges: [
      { from: 'start', to: 'charge' },
      { from: 'charge', to: 'lookup' },
      { from: 'lookup', to: 'score' },
      { from: 'score', to: 'check' },
      { from: 'check', to: 'notify', port: 'true' },
      { from: 'check', to: 'waive', port: 'false' },
      { from: 'notify', to: 'end' },
      { from: 'waive', to: 'end' },
    ],
  },
};

/** start -> ship each item (foreach, unknown effect, 2 at a time) -> total (script) -> end. */
export const batchTemplate = {
  apiVersion: api,
  kind: 'WorkflowTemplate',
  metadata: { id: 'batch' },
  spec: {
    requires: ['tool:*'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'ship-each', uses: 'core.foreach@1', config: { maxConcurrency: 2, body: { uses: 'tool.call@1', config: { tool: 'ship' } } }, inputs: { items: { source: 'input', path: '/items' } } },
      { id: 'total', uses: 'core.script@1', config: { source: 'return { shipped: input.r.results.length, sum: input.r.results.reduce((s, x) => s + x.value.n, 0) }' }, inputs: { r: out('ship-each') } },
      { id: 'end', uses: 'core.end@1', inputs: { total: out('total') } },
    ],
    edges: [
      { from: 'start', to: 'ship-each' },
      { from: 'ship-each', to: 'total' },
      { from: 'total', to: 'end' },
    ],
  },
};

/** Only safe work: fetch (template says idempotent) -> index each (the gateway says idempotent) -> end. */
export function safeTemplate(concurrency) {
  return {
    apiVersion: api,
    kind: 'WorkflowTemplate',
    metadata: { id: 'safe' },
    spec: {
      requires: ['tool:*'],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'fetch', uses: 'tool.call@1', config: { tool: 'fetch', idempotent: true }, inputs: { items: { source: 'input', path: '/items' } } },
        { id: 'index-each', uses: 'core.foreach@1', config: { maxConcurrency: concurrency, body: { uses: 'tool.call@1', config: { tool: 'index' } } }, inputs: { items: out('fetch', '/value/items') } },
        { id: 'end', uses: 'core.end@1', inputs: { count: out('index-each', '/results') } },
      ],
      edges: [
        { from: 'start', to: 'fetch' },
        { from: 'fetch', to: 'index-each' },
        { from: 'index-each', to: 'end' },
      ],
    },
  };
}

/** The runs of each scenario: launched together, so their activations share group commits. */
export const scenarios = {
  // Unknown and safe effects side by side; a foreach whose items have unknown effects.
  mixed: [
    { runId: 'run-orders-1', template: ordersTemplate, input: { amount: 27 } },
    { runId: 'run-batch-1', template: batchTemplate, input: { items: [1, 2, 3, 4] } },
  ],
  // Only idempotent and read-only work: every crash must recover without an operator.
  safe: [
    { runId: 'run-safe-1', template: safeTemplate(2), input: { items: [10, 20, 30] } },
    { runId: 'run-orders-2', template: ordersTemplate, input: { amount: 23 }, chargeIdempotent: true },
  ],
  // Enough events in flight to pass the checkpoint interval (512) in the middle of the run.
  checkpoint: [{ runId: 'run-long-1', template: safeTemplate(16), input: { items: Array.from({ length: 140 }, (_, i) => i) } }],
};

/** The deterministic result of a tool: what an operator may record when it ran but was not journaled. */
export function toolOutput(tool, input) {
  switch (tool) {
    case 'charge':
      return { value: { amount: input.amount, charged: true } };
    case 'lookup':
      return { value: { amount: input.amount + 1 } };
    case 'notify':
      return { value: { notified: input.score } };
    case 'ship':
      return { value: { n: Number(input) * 10 } };
    case 'fetch':
      return { value: { items: input.items } };
    case 'index':
      return { value: { n: Number(input) } };
    default:
      throw new Error(`no tool ${tool}`);
  }
}

/** Tools whose effect the gateway (not the template) declares idempotent. */
export const gatewayIdempotent = new Set(['index']);

/**
 * The registry of tools, each logging its executions to `effectsLog`. In the `safe` scenario the
 * charge tool is declared idempotent by the gateway (a payment API that dedups on invocationId).
 */
export function makeTools(effectsLog, { chargeIdempotent = false } = {}) {
  const tool = (name, extra = {}, later = false) => ({
    ...extra,
    execute(input, ctx) {
      appendFileSync(effectsLog, `${JSON.stringify({ tool: name, invocationId: ctx.invocationId, runId: ctx.runId, nodeId: ctx.nodeId, item: ctx.item ?? null, reissued: ctx.reissued, pid: process.pid })}\n`);
      if (!later) return toolOutput(name, input);
      return new Promise((resolve) => setImmediate(() => setImmediate(() => resolve(toolOutput(name, input)))));
    },
  });
  return {
    charge: tool('charge', chargeIdempotent ? { idempotent: true } : {}),
    // Answers two turns of the event loop later, as a lookup over the network does: still in
    // flight when the commit that records its request is written (the kernel waits one turn), on
    // every run alike. The others answer at once, and the outcome of a safe one is folded into
    // that commit (docs/durability.md, "Outcomes folded into their request's commit").
    lookup: tool('lookup', {}, true),
    notify: tool('notify'),
    ship: tool('ship'),
    fetch: tool('fetch'),
    index: tool('index', { idempotent: true }),
  };
}

export function readEffects(effectsLog) {
  if (!existsSync(effectsLog)) return [];
  return readFileSync(effectsLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

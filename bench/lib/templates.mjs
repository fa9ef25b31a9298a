// The product's templates of the benchmarks: a sequence of no-op tool calls, a foreach of no-op
// tool calls, and the 2-step run of the engine-only benchmarks. Every tool is `noop`.
const apiVersion = 'workflow.gm-hz.dev/v1alpha1';

/** `start`, then `steps` tool calls in a row (node ids from `nodeId`, `s1`, `s2`, … by default), then `end`. */
export function sequence(id, steps, nodeId = (i) => `s${i}`) {
  const nodes = [{ id: 'start', uses: 'core.start@1' }];
  for (let i = 1; i <= steps; i++) nodes.push({ id: nodeId(i), uses: 'tool.call@1', config: { tool: 'noop' } });
  nodes.push({ id: 'end', uses: 'core.end@1' });
  const edges = nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id }));
  return { apiVersion, kind: 'WorkflowTemplate', metadata: { id }, spec: { requires: ['tool:noop'], nodes, edges } };
}

/** A foreach of tool calls over the input's `items`, `concurrency` at a time. */
export function fanOut(id, concurrency, maxItems) {
  return {
    apiVersion,
    kind: 'WorkflowTemplate',
    metadata: { id },
    spec: {
      requires: ['tool:noop'],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'each', uses: 'core.foreach@1', config: { maxItems, maxConcurrency: concurrency, body: { uses: 'tool.call@1', config: { tool: 'noop' } } }, inputs: { items: { source: 'input', path: '/items' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'end' },
      ],
    },
  };
}

/** The 2-step template of the engine-only benchmarks: tool calls `a` and `b` in a row. */
export const twoStepTemplate = sequence('two', 2, (i) => (i === 1 ? 'a' : 'b'));

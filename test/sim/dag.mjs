// Random workflow templates for the simulation: start/end, tool calls of every effect class,
// scripts, conditions whose branches join again, and foreach over tools or scripts.
const api = 'workflow.gm-hz.dev/v1alpha1';

/** A small deterministic generator (mulberry32), so a seed reproduces a world exactly. */
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    chance: (p) => next() < p,
    pick: (xs) => xs[Math.floor(next() * xs.length)],
  };
}

/** Tool names by effect class: `safe-*` tools are declared idempotent by the gateway. */
export const toolClasses = ['unknown', 'idempotent', 'read-only', 'gateway'];
export function toolName(cls, i) {
  return cls === 'gateway' ? `safe-${i}` : `op-${i}`;
}

/** A tool.call node spec of a random effect class. */
function toolNode(r, id, prev) {
  const cls = r.pick(toolClasses);
  const node = { id, uses: 'tool.call@1', config: { tool: toolName(cls, r.int(0, 2)) }, inputs: { x: { source: 'output', nodeId: prev } } };
  if (cls === 'idempotent') node.config.idempotent = true;
  if (cls === 'read-only') node.readOnly = true;
  return node;
}

export function randomTemplate(r, id) {
  const nodes = [{ id: 'start', uses: 'core.start@1' }];
  const edges = [];
  let prev = 'start';
  const steps = r.int(1, 4);
  for (let s = 0; s < steps; s++) {
    const kind = r.pick(['tool', 'tool', 'script', 'foreach', 'diamond']);
    const nid = `n${s}`;
    if (kind === 'tool') {
      nodes.push(toolNode(r, nid, prev));
    } else if (kind === 'script') {
      nodes.push({ id: nid, uses: 'core.script@1', config: { source: 'return { v: ((input.x && input.x.v) || 0) + 1 }' }, inputs: { x: { source: 'output', nodeId: prev } } });
    } else if (kind === 'foreach') {
      const items = Array.from({ length: r.int(2, 4) }, (_, i) => i + r.int(0, 9));
      const body = r.chance(0.25)
        ? { uses: 'core.script@1', config: { source: 'return { v: input * 2 }' } }
        : (() => {
            const t = toolNode(r, 'body', prev);
            return { uses: 'tool.call@1', config: t.config };
          })();
      // A read-only body has no template flag (foreach bodies carry no readOnly): use the node's.
      const node = { id: nid, uses: 'core.foreach@1', config: { maxConcurrency: r.int(1, 3), failurePolicy: r.pick(['fail-fast', 'continue']), body }, inputs: { items: { source: 'literal', value: items } } };
      if (r.chance(0.2)) node.readOnly = true;
      nodes.push(node);
    } else {
      const c = `${nid}c`;
      nodes.push({ id: c, uses: 'core.condition@1', config: { operator: r.pick(['gt', 'lte', 'exists']) }, inputs: { left: { source: 'output', nodeId: prev, path: '/v' }, right: { source: 'literal', value: r.int(0, 6) } } });
      edges.push({ from: prev, to: c });
      nodes.push(toolNode(r, `${nid}t`, c));
      nodes.push({ id: `${nid}f`, uses: 'core.script@1', config: { source: 'return { v: 7 }' } });
      edges.push({ from: c, to: `${nid}t`, port: 'true' }, { from: c, to: `${nid}f`, port: 'false' });
      // The join: runs when both branch edges are decided and one was taken.
      nodes.push({ id: nid, uses: 'core.script@1', config: { source: 'return { v: ((input.t && input.t.v) || 0) + ((input.f && input.f.v) || 0) }' }, inputs: { t: { source: 'output', nodeId: `${nid}t` }, f: { source: 'output', nodeId: `${nid}f` } } });
      edges.push({ from: `${nid}t`, to: nid }, { from: `${nid}f`, to: nid });
      prev = nid;
      continue;
    }
    edges.push({ from: prev, to: nid });
    prev = nid;
  }
  nodes.push({ id: 'end', uses: 'core.end@1', inputs: { last: { source: 'output', nodeId: prev } } });
  edges.push({ from: prev, to: 'end' });
  return { apiVersion: api, kind: 'WorkflowTemplate', metadata: { id }, spec: { requires: ['tool:*'], nodes, edges } };
}

/** The deterministic result of a sim tool. */
export function simToolOutput(name, input) {
  const text = JSON.stringify(input ?? null) + name;
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0;
  return { v: h % 10 };
}

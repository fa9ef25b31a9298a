// The graph of one template, derived once per plan and cached: node lookup, incoming and
// outgoing edges, topological order.
import { nodeKinds } from '../nodes/index.js';
import type { EdgeSpec, NodeSpec, WorkflowTemplate } from '../protocol/template.js';

export interface Graph {
  template: WorkflowTemplate;
  nodes: Map<string, NodeSpec>;
  /** Edge indices into `template.spec.edges`, by target node. */
  incoming: Map<string, number[]>;
  /** Edge indices by source node. */
  outgoing: Map<string, number[]>;
  edges: EdgeSpec[];
  /** Node ids in a deterministic topological order (template order among peers). */
  order: string[];
  /** Position of each node in `order`. */
  position: Map<string, number>;
  /** Nodes without incoming edges (where a run begins). */
  roots: string[];
  startId: string;
  /**
   * The start of each node's `node` member in the journal's text, up to its attempt:
   * `{"id":…,"uses":…,"attempt":` (what `JSON.stringify` writes for it), built once per plan.
   */
  nodeJsonHead: Map<string, string>;
}

/** The edges of each node, by index into `edges`, and a topological order: what validation needs of a graph. */
export type Links = Pick<Graph, 'incoming' | 'outgoing' | 'order' | 'position'>;

export function linkNodes(nodes: readonly NodeSpec[], edges: readonly EdgeSpec[]): Links {
  const incoming = new Map<string, number[]>();
  const outgoing = new Map<string, number[]>();
  for (const n of nodes) {
    incoming.set(n.id, []);
    outgoing.set(n.id, []);
  }
  for (let i = 0; i < edges.length; i++) {
    incoming.get(edges[i].to)?.push(i);
    outgoing.get(edges[i].from)?.push(i);
  }
  const order = topologicalOrder(nodes, edges).order;
  const position = new Map<string, number>();
  for (let i = 0; i < order.length; i++) position.set(order[i], i);
  return { incoming, outgoing, order, position };
}

export function buildGraph(template: WorkflowTemplate): Graph {
  const { incoming, outgoing, order, position } = linkNodes(template.spec.nodes, template.spec.edges);
  const nodes = new Map(template.spec.nodes.map((n) => [n.id, n]));
  const start = template.spec.nodes.find((n) => nodeKinds.get(n.uses)?.role === 'start');
  const roots = order.filter((id) => incoming.get(id)!.length === 0);
  const nodeJsonHead = new Map(template.spec.nodes.map((n) => [n.id, `{"id":${JSON.stringify(n.id)},"uses":${JSON.stringify(n.uses)},"attempt":`]));
  return { template, nodes, incoming, outgoing, edges: template.spec.edges, order, position, roots, startId: start ? start.id : '', nodeJsonHead };
}

/** Kahn's algorithm; `cycle` lists the nodes that could not be ordered. */
export function topologicalOrder(nodes: readonly NodeSpec[], edges: readonly EdgeSpec[]): { order: string[]; cycle: string[] } {
  const indegree = new Map<string, number>(nodes.map((n) => [n.id, 0]));
  const next = new Map<string, string[]>(nodes.map((n) => [n.id, []]));
  for (const e of edges) {
    if (!indegree.has(e.from) || !indegree.has(e.to)) continue;
    indegree.set(e.to, (indegree.get(e.to) ?? 0) + 1);
    next.get(e.from)!.push(e.to);
  }
  const ready = nodes.filter((n) => indegree.get(n.id) === 0).map((n) => n.id);
  const order: string[] = [];
  while (ready.length > 0) {
    const id = ready.shift()!;
    order.push(id);
    for (const to of next.get(id)!) {
      const d = indegree.get(to)! - 1;
      indegree.set(to, d);
      if (d === 0) ready.push(to);
    }
  }
  const placed = new Set(order);
  return { order, cycle: nodes.filter((n) => !placed.has(n.id)).map((n) => n.id) };
}

/** Every node upstream of `id` (its ancestors). */
export function ancestorsOf(graph: Pick<Graph, 'incoming' | 'edges'>, id: string): Set<string> {
  const seen = new Set<string>();
  const stack = [id];
  while (stack.length > 0) {
    const current = stack.pop()!;
    for (const i of graph.incoming.get(current) ?? []) {
      const from = graph.edges[i].from;
      if (!seen.has(from)) {
        seen.add(from);
        stack.push(from);
      }
    }
  }
  return seen;
}

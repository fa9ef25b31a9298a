// The draft's graph, drawn from the template JSON in the editor, where edges are drawn too: click
// a node, then another, and an edge from the first to the second is appended to `spec.edges`;
// click an edge to take it out. The JSON stays the only model: an edit inserts or removes the
// bytes of that one edge in the text, so every other byte keeps its place.
import { el } from './api.js';
import { valueSpans } from './node-form.js';

interface Edge {
  from: string;
  to: string;
  port?: string;
}

interface Draft {
  nodes: { id: string; uses: string }[];
  edges: Edge[];
}

const svgNs = 'http://www.w3.org/2000/svg';
const box = { width: 150, height: 34, gapX: 60, gapY: 28 };

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, ...children: (SVGElement | string)[]): SVGElementTagNameMap[K] {
  const node = document.createElementNS(svgNs, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.append(c);
  return node;
}

/** The template's nodes and edges, or undefined while the text is not JSON of that shape. */
function draftOf(text: string): Draft | undefined {
  try {
    const spec = (JSON.parse(text) as { spec?: { nodes?: unknown; edges?: unknown } }).spec;
    if (!spec || !Array.isArray(spec.nodes)) return undefined;
    const nodes = spec.nodes.filter((n): n is { id: string; uses: string } => typeof n?.id === 'string');
    const edges = Array.isArray(spec.edges) ? spec.edges.filter((e): e is Edge => typeof e?.from === 'string' && typeof e?.to === 'string') : [];
    return { nodes, edges };
  } catch {
    return undefined;
  }
}

/** The text with `edge` appended to `spec.edges` (created when the spec has none). */
export function addEdge(text: string, edge: Edge): string {
  const spans = valueSpans(text);
  const item = JSON.stringify(edge);
  const edges = spans.get('/spec/edges');
  if (!edges) {
    const spec = spans.get('/spec')!;
    const head = text.slice(0, spec[1] - 1).trimEnd();
    return `${head}, "edges": [${item}]${text.slice(head.length)}`;
  }
  let last = -1;
  for (let n = 0; spans.has(`/spec/edges/${n}`); n++) last = n;
  if (last < 0) return text.slice(0, edges[0] + 1) + item + text.slice(edges[1] - 1);
  const end = spans.get(`/spec/edges/${last}`)![1];
  // After the last edge, on a line of its own when the edges are one a line.
  const before = text.slice(spans.get(`/spec/edges/${last - 1}`)?.[1] ?? edges[0] + 1, spans.get(`/spec/edges/${last}`)![0]);
  const separator = before.includes('\n') ? `,${before.slice(before.indexOf('\n'))}` : ', ';
  return text.slice(0, end) + separator + item + text.slice(end);
}

/** The text without the `index`th edge (and the comma that parted it from its neighbour). */
export function removeEdge(text: string, index: number): string {
  const spans = valueSpans(text);
  const own = spans.get(`/spec/edges/${index}`);
  if (!own) return text;
  const next = spans.get(`/spec/edges/${index + 1}`);
  const prev = spans.get(`/spec/edges/${index - 1}`);
  if (next) return text.slice(0, own[0]) + text.slice(next[0]);
  if (prev) return text.slice(0, prev[1]) + text.slice(own[1]);
  return text.slice(0, own[0]) + text.slice(own[1]);
}

/** Columns by longest path from the nodes nothing leads to (a cycle's nodes stay where they are reached). */
function layout(draft: Draft): Map<string, { x: number; y: number }> {
  const depth = new Map<string, number>(draft.nodes.map((n) => [n.id, 0]));
  for (let pass = 0; pass < draft.nodes.length; pass++) {
    let changed = false;
    for (const e of draft.edges) {
      const d = (depth.get(e.from) ?? 0) + 1;
      if (depth.has(e.to) && d > depth.get(e.to)! && d < draft.nodes.length) {
        depth.set(e.to, d);
        changed = true;
      }
    }
    if (!changed) break;
  }
  const rows = new Map<number, number>();
  const at = new Map<string, { x: number; y: number }>();
  for (const n of draft.nodes) {
    const column = depth.get(n.id)!;
    const row = rows.get(column) ?? 0;
    rows.set(column, row + 1);
    at.set(n.id, { x: 10 + column * (box.width + box.gapX), y: 10 + row * (box.height + box.gapY) });
  }
  return at;
}

/** The graph under the editor; `edited` is called after the editor's text changed. */
export function edgeGraph(editor: HTMLTextAreaElement, edited: () => void): HTMLElement {
  const hint = el('p', { class: 'muted small', id: 'graph-hint' }, 'Click a node, then another, to draw an edge; click an edge to remove it.');
  const holder = el('div', { id: 'draft-graph', class: 'draft-graph' });
  let from: string | undefined;

  function draw(): void {
    const draft = draftOf(editor.value);
    holder.replaceChildren();
    if (!draft) return void holder.append(el('p', { class: 'muted' }, 'The graph is drawn once the draft is a template with spec.nodes.'));
    const at = layout(draft);
    const width = Math.max(...[...at.values()].map((p) => p.x + box.width), 200) + 10;
    const height = Math.max(...[...at.values()].map((p) => p.y + box.height), 60) + 10;
    const graph = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'the draft graph' });
    graph.append(svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, svg('path', { d: 'M 0 0 L 10 5 L 0 10 z' }))));
    draft.edges.forEach((e, index) => {
      const a = at.get(e.from);
      const b = at.get(e.to);
      if (!a || !b) return;
      // A slight arc, so that an edge between nodes of one row still has a height to click.
      const [x1, y1, x2, y2] = [a.x + box.width, a.y + box.height / 2, b.x, b.y + box.height / 2];
      const bend = Math.max(8, Math.abs(y2 - y1) / 4);
      const d = `M ${x1} ${y1} C ${x1 + 20} ${y1 - bend}, ${x2 - 20} ${y2 - bend}, ${x2} ${y2}`;
      // The drawn line, and a wide transparent one over it that takes the click.
      const hit = svg('path', { d, class: 'edge', fill: 'none', stroke: 'transparent', 'stroke-width': 14, 'data-edge': index, 'data-from': e.from, 'data-to': e.to });
      hit.append(svg('title', {}, `${e.from} → ${e.to}${e.port ? ` (${e.port})` : ''}: click to remove`));
      hit.addEventListener('click', () => {
        editor.value = removeEdge(editor.value, index);
        edited();
      });
      graph.append(svg('path', { d, class: 'edge-line', fill: 'none', 'marker-end': 'url(#arrow)' }), hit);
    });
    for (const n of draft.nodes) {
      const p = at.get(n.id)!;
      const group = svg('g', { class: `node${from === n.id ? ' from' : ''}`, 'data-node': n.id, transform: `translate(${p.x},${p.y})` }, svg('rect', { width: box.width, height: box.height, rx: 6 }), svg('text', { x: 8, y: 14 }, n.id), svg('text', { x: 8, y: 27, class: 'uses' }, n.uses));
      group.addEventListener('click', () => {
        if (from === undefined || from === n.id) {
          from = from === n.id ? undefined : n.id;
          return draw();
        }
        const edge = { from, to: n.id };
        from = undefined;
        editor.value = addEdge(editor.value, edge);
        edited();
      });
      graph.append(group);
    }
    holder.append(graph);
  }

  editor.addEventListener('input', draw);
  draw();
  return el('div', { class: 'graph-editor' }, hint, holder);
}

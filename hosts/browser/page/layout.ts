// Automatic layered layout of a DAG, left to right: longest-path layering, then a few
// barycenter sweeps to reduce crossings. Pure and deterministic (same plan, same picture).

export interface LayoutInput {
  nodes: string[];
  edges: { from: string; to: string }[];
}

export interface Box {
  id: string;
  layer: number;
  row: number;
  x: number;
  y: number;
}

export interface Layout {
  boxes: Map<string, Box>;
  width: number;
  height: number;
}

export const nodeWidth = 176;
export const nodeHeight = 58;
const layerGap = 64;
const rowGap = 26;
const margin = 24;
const sweeps = 4;

/** Layer of each node: the length of the longest path reaching it from a source. */
export function layersOf(input: LayoutInput): Map<string, number> {
  const known = new Set(input.nodes);
  const incoming = new Map<string, number>(input.nodes.map((n) => [n, 0]));
  const out = new Map<string, string[]>(input.nodes.map((n) => [n, []]));
  for (const e of input.edges) {
    if (!known.has(e.from) || !known.has(e.to)) continue;
    out.get(e.from)!.push(e.to);
    incoming.set(e.to, incoming.get(e.to)! + 1);
  }
  const layer = new Map<string, number>();
  const queue = input.nodes.filter((n) => incoming.get(n) === 0);
  for (const n of queue) layer.set(n, 0);
  for (let i = 0; i < queue.length; i++) {
    const n = queue[i];
    for (const m of out.get(n)!) {
      layer.set(m, Math.max(layer.get(m) ?? 0, layer.get(n)! + 1));
      incoming.set(m, incoming.get(m)! - 1);
      if (incoming.get(m) === 0) queue.push(m);
    }
  }
  // A cycle cannot pass validation; draw its nodes after everything else rather than fail.
  const last = Math.max(0, ...layer.values());
  for (const n of input.nodes) if (!layer.has(n)) layer.set(n, last + 1);
  return layer;
}

export function layoutDag(input: LayoutInput): Layout {
  const layer = layersOf(input);
  const count = Math.max(0, ...layer.values()) + 1;
  const columns: string[][] = Array.from({ length: count }, () => []);
  for (const n of input.nodes) columns[layer.get(n)!].push(n);

  const preds = new Map<string, string[]>(input.nodes.map((n) => [n, []]));
  const succs = new Map<string, string[]>(input.nodes.map((n) => [n, []]));
  for (const e of input.edges) {
    if (!preds.has(e.to) || !succs.has(e.from)) continue;
    preds.get(e.to)!.push(e.from);
    succs.get(e.from)!.push(e.to);
  }
  const position = new Map<string, number>();
  const place = () => columns.forEach((col) => col.forEach((n, i) => position.set(n, i)));
  place();
  const reorder = (col: string[], neighbours: Map<string, string[]>) => {
    const key = new Map<string, number>();
    for (const n of col) {
      const ns = neighbours.get(n)!;
      key.set(n, ns.length === 0 ? position.get(n)! : ns.reduce((s, m) => s + position.get(m)!, 0) / ns.length);
    }
    // Stable: ties keep their current order.
    col.sort((a, b) => key.get(a)! - key.get(b)! || position.get(a)! - position.get(b)!);
    col.forEach((n, i) => position.set(n, i));
  };
  for (let s = 0; s < sweeps; s++) {
    for (let l = 1; l < count; l++) reorder(columns[l], preds);
    for (let l = count - 2; l >= 0; l--) reorder(columns[l], succs);
  }

  const tallest = Math.max(1, ...columns.map((c) => c.length));
  const height = margin * 2 + tallest * nodeHeight + (tallest - 1) * rowGap;
  const width = margin * 2 + count * nodeWidth + (count - 1) * layerGap;
  const boxes = new Map<string, Box>();
  columns.forEach((col, l) => {
    // Centre each column vertically.
    const used = col.length * nodeHeight + (col.length - 1) * rowGap;
    const top = (height - used) / 2;
    col.forEach((id, row) => boxes.set(id, { id, layer: l, row, x: margin + l * (nodeWidth + layerGap), y: top + row * (nodeHeight + rowGap) }));
  });
  return { boxes, width, height };
}

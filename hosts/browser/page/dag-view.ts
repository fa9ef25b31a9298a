// Draws the pinned plan's root template as an SVG graph: node boxes coloured by state, taken
// edges solid, skipped edges dashed, edges never reached faint.
import { layoutDag, nodeHeight, nodeWidth } from './layout.js';
import type { RunModel } from './run-model.js';

const svgNs = 'http://www.w3.org/2000/svg';
const minScale = 0.62;

function el<K extends keyof SVGElementTagNameMap>(name: K, attrs: Record<string, string | number>, parent?: Element): SVGElementTagNameMap[K] {
  const node = document.createElementNS(svgNs, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  parent?.appendChild(node);
  return node;
}

/**
 * Sets a label, shortened with an ellipsis to fit `widthMax` as the browser measures it (the full
 * text is in the node's title). Without a measurement (a detached or hidden graph) it keeps a
 * character budget of about 7 px per character.
 */
function fitText(node: SVGTextElement, text: string, widthMax: number): void {
  node.textContent = text;
  const measure = () => {
    try {
      return node.getComputedTextLength();
    } catch {
      return Number.NaN;
    }
  };
  let width = measure();
  if (!Number.isFinite(width) || width === 0) {
    const chars = Math.max(1, Math.floor(widthMax / 7));
    if (text.length > chars) node.textContent = `${text.slice(0, chars - 1)}…`;
    return;
  }
  if (width <= widthMax) return;
  // The longest prefix that fits with its ellipsis (binary search on the prefix length).
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    node.textContent = `${text.slice(0, mid)}…`;
    width = measure();
    if (width <= widthMax) lo = mid;
    else hi = mid - 1;
  }
  node.textContent = `${text.slice(0, lo)}…`;
}

/** Left padding of a node's labels (after the state bar), and the gaps around its pill and flag. */
const labelX = 16;
const pillRight = 8;
const labelGap = 6;
const flagSpace = 20;

export function renderDag(container: HTMLElement, model: RunModel, selected: string | undefined, onSelect: (id: string) => void): void {
  const ids = [...model.nodes.keys()];
  const layout = layoutDag({ nodes: ids, edges: model.edges });
  const available = container.clientWidth || layout.width;
  // Shrink a wide graph to fit, down to a size where labels stay legible; past that, scroll.
  const scale = Math.min(1, Math.max(minScale, (available - 4) / layout.width));
  container.textContent = '';
  const svg = el('svg', { id: 'dag', viewBox: `0 0 ${layout.width} ${layout.height}`, width: Math.round(layout.width * scale), height: Math.round(layout.height * scale), role: 'img', 'aria-label': `graph of ${model.workflowId}` }, container);
  const defs = el('defs', {}, svg);
  for (const [name, colour] of [
    ['taken', '#334155'],
    ['skipped', '#a8b0bc'],
    ['open', '#cbd5e1'],
  ]) {
    const marker = el('marker', { id: `arrow-${name}`, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, defs);
    el('path', { d: 'M0,0 L10,5 L0,10 z', fill: colour }, marker);
  }

  const edgeLayer = el('g', { class: 'edges' }, svg);
  for (const edge of model.edges) {
    const a = layout.boxes.get(edge.from);
    const b = layout.boxes.get(edge.to);
    if (!a || !b) continue;
    const x1 = a.x + nodeWidth;
    const y1 = a.y + nodeHeight / 2;
    const x2 = b.x - 2;
    const y2 = b.y + nodeHeight / 2;
    const bend = Math.max(30, (x2 - x1) / 2);
    const state = edge.status ?? 'open';
    const g = el('g', { class: `edge edge-${state}`, 'data-edge': edge.index, 'data-from': edge.from, 'data-to': edge.to }, edgeLayer);
    el('path', { d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`, 'marker-end': `url(#arrow-${state})` }, g);
    const label = [edge.port, edge.status === 'skipped' ? 'skipped' : undefined].filter(Boolean).join(' · ');
    if (label) {
      const mx = (x1 + x2) / 2;
      const my = (y1 + y2) / 2;
      const w = label.length * 6.4 + 10;
      el('rect', { x: mx - w / 2, y: my - 9, width: w, height: 18, rx: 9, class: 'edge-label-bg' }, g);
      el('text', { x: mx, y: my + 4, 'text-anchor': 'middle', class: 'edge-label' }, g).textContent = label;
    }
  }

  const nodeLayer = el('g', { class: 'nodes' }, svg);
  for (const [id, view] of model.nodes) {
    const box = layout.boxes.get(id)!;
    const g = el('g', { class: `node state-${view.status}${view.highlight ? ` hl-${view.highlight}` : ''}${id === selected ? ' selected' : ''}`, 'data-node': id, 'data-status': view.status, tabindex: 0, transform: `translate(${box.x},${box.y})` }, nodeLayer);
    el('rect', { width: nodeWidth, height: nodeHeight, rx: 10, class: 'node-box' }, g);
    el('rect', { width: 6, height: nodeHeight - 16, x: 0, y: 8, rx: 3, class: 'node-bar' }, g);
    const flagged = view.highlight === 'unknown' || view.highlight === 'approval';
    fitText(el('text', { x: labelX, y: 23, class: 'node-id' }, g), id, nodeWidth - labelX - labelGap - (flagged ? flagSpace : 0));
    // The state pill first: the `uses` label gets the room left of it.
    const pill = view.attempt > 1 ? `${view.status} ×${view.attempt}` : view.status;
    const pillRect = el('rect', { y: 31, height: 17, rx: 8.5, class: 'node-pill' }, g);
    const pillText = el('text', { y: 43, 'text-anchor': 'middle', class: 'node-pill-text' }, g);
    pillText.textContent = pill;
    let pillTextWidth = Number.NaN;
    try {
      pillTextWidth = pillText.getComputedTextLength();
    } catch {
      // not measurable: estimated below
    }
    const pw = Math.min(nodeWidth - labelX - pillRight, (Number.isFinite(pillTextWidth) && pillTextWidth > 0 ? pillTextWidth : pill.length * 6) + 14);
    pillRect.setAttribute('x', String(nodeWidth - pw - pillRight));
    pillRect.setAttribute('width', String(pw));
    pillText.setAttribute('x', String(nodeWidth - pw / 2 - pillRight));
    fitText(el('text', { x: labelX, y: 43, class: 'node-uses' }, g), view.spec.uses, nodeWidth - pw - pillRight - labelGap - labelX);
    if (flagged) {
      el('circle', { cx: nodeWidth - 10, cy: 12, r: 6, class: 'node-flag' }, g);
    }
    el('title', {}, g).textContent = `${id} (${view.spec.uses}): ${view.status}`;
    g.addEventListener('click', () => onSelect(id));
    g.addEventListener('keydown', (ev) => {
      if ((ev as KeyboardEvent).key === 'Enter') onSelect(id);
    });
  }
}

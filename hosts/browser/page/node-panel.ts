// The details of one node: state, attempts with their inputs (capability.requested), committed
// output and errors.
import { renderTurns } from './agent-turns.js';
import type { NodeView } from './run-model.js';

/** Attempts shown per node; a foreach over thousands of items lists the first ones. */
export const attemptsShownMax = 50;
const jsonCharsMax = 20_000;

export function h(tag: string, attrs: Record<string, string> = {}, ...children: (Node | string | undefined)[]): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) if (c !== undefined) node.append(c);
  return node;
}

export function jsonBlock(value: unknown, cls = 'json'): HTMLElement {
  let text = JSON.stringify(value, null, 2) ?? 'undefined';
  if (text.length > jsonCharsMax) text = `${text.slice(0, jsonCharsMax)}\n… (${text.length.toLocaleString('en')} characters)`;
  return h('pre', { class: cls }, text);
}

const highlightText = {
  unknown: 'Outcome unknown: the host lost track of a side effect (needs attention / abandoned).',
  approval: 'Waits for, or was decided by, a person.',
  failure: 'Failed at least once.',
} as const;

export function renderNodePanel(panel: HTMLElement, view: NodeView | undefined, onShowEvents: (id: string) => void, onPickSeq: (seq: number) => void): void {
  panel.textContent = '';
  if (!view) {
    panel.append(h('p', { class: 'muted' }, 'Click a node in the graph to see its attempts, inputs, outputs and errors.'));
    return;
  }
  const id = view.spec.id;
  const showEvents = h('button', { type: 'button', class: 'link' }, `${view.events} event${view.events === 1 ? '' : 's'}`);
  showEvents.onclick = () => onShowEvents(id);
  panel.append(
    h('div', { class: 'node-head' }, h('h3', {}, id), h('span', { class: `pill state-${view.status}`, id: 'node-status' }, view.status)),
    h('dl', { class: 'facts' }, h('dt', {}, 'uses'), h('dd', {}, view.spec.uses), h('dt', {}, 'attempt'), h('dd', {}, String(view.attempt)), h('dt', {}, 'journal'), h('dd', {}, showEvents)),
  );
  if (view.highlight) panel.append(h('p', { class: `note hl-${view.highlight}` }, highlightText[view.highlight]));
  if (view.output !== undefined) panel.append(h('h4', {}, 'Committed output'), jsonBlock(view.output));
  if (view.error !== undefined) panel.append(h('h4', {}, 'Error'), jsonBlock(view.error, 'json error'));
  if (view.agent) panel.append(...renderTurns(view.agent, onPickSeq));
  if (view.attempts.length > 0) {
    panel.append(h('h4', {}, `Attempts (${view.attempts.length})`));
    for (const a of view.attempts.slice(0, attemptsShownMax)) {
      const title = `${a.item !== undefined ? `item ${a.item} · ` : ''}attempt ${a.attempt}${a.capability ? ` · ${a.capability}` : ''}${a.outcome ? ` · ${a.outcome}` : ''}`;
      const details = h('details', { class: 'attempt' }, h('summary', {}, title));
      const seqLinks = h('p', { class: 'seqs' }, 'events ');
      for (const seq of a.seqs.slice(0, 40)) {
        const link = h('button', { type: 'button', class: 'link' }, `#${seq}`);
        link.onclick = () => onPickSeq(seq);
        seqLinks.append(link, ' ');
      }
      details.append(seqLinks);
      if (a.invocationId) details.append(h('p', { class: 'muted small' }, `invocation ${a.invocationId}${a.effect ? ` · effect ${a.effect}` : ''}`));
      if (a.input !== undefined) details.append(h('h5', {}, 'Input'), jsonBlock(a.input));
      if (a.output !== undefined) details.append(h('h5', {}, 'Output'), jsonBlock(a.output));
      if (a.error !== undefined) details.append(h('h5', {}, 'Error'), jsonBlock(a.error, 'json error'));
      panel.append(details);
    }
    if (view.attempts.length > attemptsShownMax) panel.append(h('p', { class: 'muted' }, `… and ${view.attempts.length - attemptsShownMax} more (see the timeline filtered to this node)`));
    // A few attempts are shown open; many are left folded.
    if (view.attempts.length <= 3) panel.querySelectorAll<HTMLDetailsElement>('details.attempt').forEach((d) => (d.open = true));
  }
  const config = view.spec.config;
  if (config && Object.keys(config).length > 0) panel.append(h('details', { class: 'config' }, h('summary', {}, 'Configuration'), jsonBlock(config)));
}

// Triggers and deliveries: bindings (every revision, with its state), the ingress journal (what
// each webhook, DingTalk or cron event became: the run it launched, the first event's run for a
// `deduplicated` one, the reason of a `rejected` one), and result deliveries with the dead ones
// (the dead-letter queue), which an operator can retry.
import { api, el, runPageUrl, setStatus, time } from './api.js';

interface Binding {
  id: string;
  revision: number;
  source: string;
  state: string;
  target: string;
  createdAt: number;
  publishedAt?: number;
}

interface IngressRecord {
  id: number;
  source: string;
  bindingId: string;
  bindingRevision?: number;
  sourceEventId?: string;
  status: string;
  reasonCode?: string;
  reason?: string;
  runId?: string;
  caller?: string;
  receivedAt: number;
}

interface Delivery {
  id: string;
  runId: string;
  phase: string;
  state: string;
  attempts: number;
  lastError?: string;
  lastStatusCode?: number;
  updatedAt: number;
}

function table(id: string, heads: string[], rows: HTMLTableRowElement[]): HTMLTableElement {
  return el('table', { id }, el('thead', {}, el('tr', {}, ...heads.map((h) => el('th', {}, h)))), el('tbody', {}, ...rows));
}

function runLink(runId: string | undefined): Node {
  return runId ? el('a', { class: 'mono', href: runPageUrl(runId) }, runId) : el('span', { class: 'muted' }, '—');
}

const pillOf: Record<string, string> = { launched: 'completed', published: 'completed', delivered: 'completed', deduplicated: 'paused', rejected: 'failed', dead: 'failed', disabled: 'cancelled', missed: 'queued', pending: 'running', draft: 'queued', received: 'running' };

function pill(text: string): HTMLElement {
  return el('span', { class: 'pill', 'data-status': pillOf[text] ?? text }, text);
}

export async function showTriggers(root: HTMLElement, role: string): Promise<void> {
  const [bindings, ingress, deliveries] = await Promise.all([
    api<{ bindings: Binding[] }>('v1/console/bindings'),
    api<{ records: IngressRecord[]; nextAfter?: number }>('v1/console/ingress?limit=200'),
    api<{ deliveries: Delivery[] }>('v1/console/deliveries?limit=200'),
  ]);
  const bindingRows = bindings.body.bindings.map((b) =>
    el('tr', { 'data-binding': b.id, 'data-revision': String(b.revision) }, el('td', { class: 'mono' }, `${b.id}@${b.revision}`), el('td', {}, b.source), el('td', {}, pill(b.state)), el('td', { class: 'mono' }, b.target), el('td', {}, time(b.publishedAt ?? b.createdAt))),
  );
  // Newest first on screen; the server pages them in id order.
  const ingressRows = [...ingress.body.records].reverse().map((r) =>
    el(
      'tr',
      { 'data-ingress': String(r.id), 'data-status': r.status },
      el('td', {}, String(r.id)),
      el('td', {}, time(r.receivedAt)),
      el('td', { class: 'mono' }, `${r.bindingId}${r.bindingRevision !== undefined ? `@${r.bindingRevision}` : ''}`),
      el('td', { class: 'mono' }, r.sourceEventId ?? ''),
      el('td', {}, pill(r.status)),
      el('td', { class: 'run' }, runLink(r.runId)),
      el('td', { class: 'reason', title: r.reason }, r.reasonCode ? `${r.reasonCode}: ${r.reason ?? ''}` : r.status === 'deduplicated' ? 'the same event again: the run its first delivery started' : ''),
    ),
  );
  const deliveryRows = deliveries.body.deliveries.map((d) => {
    const retry = el('button', { class: 'button secondary', type: 'button', 'data-action': 'retry' }, 'Retry');
    retry.hidden = d.state !== 'dead';
    retry.disabled = role !== 'operator';
    retry.addEventListener('click', async () => {
      retry.disabled = true;
      try {
        await api(`v1/console/deliveries/${encodeURIComponent(d.id)}/retry`, { method: 'POST', body: {} });
        setStatus(`delivery ${d.id} is pending again`, 'ok');
      } catch (err) {
        setStatus((err as Error).message, 'error');
      }
    });
    return el('tr', { 'data-delivery': d.id, 'data-state': d.state }, el('td', { class: 'mono' }, d.id), el('td', {}, runLink(d.runId)), el('td', {}, d.phase), el('td', {}, pill(d.state)), el('td', {}, String(d.attempts)), el('td', { title: d.lastError }, d.lastError ? `${d.lastStatusCode ?? ''} ${d.lastError}`.trim() : ''), el('td', {}, retry));
  });
  root.replaceChildren(
    el('section', { class: 'card' }, el('h2', {}, 'Bindings'), table('bindings', ['Binding', 'Source', 'State', 'Target', 'Since'], bindingRows)),
    el('section', { class: 'card' }, el('h2', {}, 'Ingress journal'), table('ingress', ['#', 'Received', 'Binding', 'Event id', 'Status', 'Run', 'Why'], ingressRows)),
    el('section', { class: 'card' }, el('h2', {}, 'Deliveries'), table('deliveries', ['Delivery', 'Run', 'Phase', 'State', 'Attempts', 'Last error', ''], deliveryRows)),
  );
  setStatus(`${bindingRows.length} binding revisions · ${ingressRows.length} ingress records · ${deliveryRows.length} deliveries`, 'ok');
}

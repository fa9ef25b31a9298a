// The runs list: filters (status, what a paused run waits for, template, origin, created from/to)
// and a search (run id prefix, or the source event id of the trigger event that started a run),
// all answered by the server a page at a time with a cursor, so the page holds one page of rows
// however many runs the store has.
import { api, downloadExport, el, runPageUrl, setStatus, time } from './api.js';

interface RunRow {
  runId: string;
  status: string;
  createdAt: number;
  updatedAt: number;
  lastSeq: number;
  pausedReason?: string;
  waitReason?: string;
  error?: { code: string; message: string };
  waiting: { approvals: number; attention: number };
}

/** How often the counts are read again. */
const countsEveryMs = 5000;

const statuses = ['', 'running', 'paused', 'queued', 'completed', 'failed', 'cancelled'];
const waits: [string, string][] = [['', 'anything'], ['approval', 'an approval'], ['needs_attention', 'attention']];
const origins: [string, string][] = [['', 'any'], ['trigger', 'a trigger'], ['direct', 'not a trigger']];

function localToMs(value: string): string | undefined {
  if (!value) return undefined;
  const t = new Date(value).getTime();
  return Number.isNaN(t) ? undefined : String(t);
}

export function showRuns(root: HTMLElement): void {
  const status = el('select', { id: 'f-status', name: 'status' }, ...statuses.map((s) => el('option', { value: s }, s || 'any')));
  const from = el('input', { id: 'f-from', type: 'datetime-local' });
  const to = el('input', { id: 'f-to', type: 'datetime-local' });
  const search = el('input', { id: 'f-search', type: 'search', placeholder: 'run id (prefix) or event id' });
  const wait = el('select', { id: 'f-wait', name: 'wait' }, ...waits.map(([v, text]) => el('option', { value: v }, text)));
  const template = el('input', { id: 'f-template', type: 'text', placeholder: 'id or id@revision' });
  const origin = el('select', { id: 'f-origin', name: 'origin' }, ...origins.map(([v, text]) => el('option', { value: v }, text)));
  const binding = el('input', { id: 'f-binding', type: 'text', placeholder: 'binding id or id@revision' });
  const form = el(
    'form',
    { class: 'filters card', id: 'filters' },
    el('label', {}, 'Status', status),
    el('label', {}, 'Waiting for', wait),
    el('label', {}, 'Template', template),
    el('label', {}, 'Origin', origin),
    el('label', {}, 'Binding', binding),
    el('label', {}, 'Created from', from),
    el('label', {}, 'Created before', to),
    el('label', {}, 'Search', search),
    el('button', { class: 'button', type: 'submit' }, 'Apply'),
  );
  const tbody = el('tbody');
  const table = el('table', { id: 'runs' }, el('thead', {}, el('tr', {}, ...['Run', 'Status', 'Created', 'Updated', 'Events', 'Waiting for', ''].map((h) => el('th', {}, h)))), tbody);
  const pageInfo = el('span', { id: 'page-info', class: 'muted small' });
  const first = el('button', { class: 'button secondary', id: 'first-page', type: 'button' }, 'First page');
  const next = el('button', { class: 'button secondary', id: 'next-page', type: 'button' }, 'Next page');
  const counts = el('div', { id: 'counts', class: 'counts' });
  root.replaceChildren(form, counts, el('div', { class: 'card' }, table, el('div', { class: 'pager' }, first, next, pageInfo)));

  // Live counts: read again every few seconds while the list is open (one grouped count a read).
  async function showCounts(): Promise<void> {
    const { body } = await api<{ counts: Record<string, number> }>('v1/console/counts');
    counts.replaceChildren(...Object.entries(body.counts).map(([s, n]) => el('span', { class: 'pill', 'data-status': s }, `${s} ${n.toLocaleString('en')}`)));
  }
  void showCounts().catch(() => undefined);
  const timer = setInterval(() => {
    if (!counts.isConnected) return clearInterval(timer);
    void showCounts().catch(() => undefined);
  }, countsEveryMs);

  let cursor: string | undefined;
  let pageNo = 1;

  async function load(at: string | undefined): Promise<void> {
    const q = new URLSearchParams({ limit: '50' });
    if (status.value) q.set('status', status.value);
    const f = localToMs(from.value);
    const t = localToMs(to.value);
    if (f) q.set('from', f);
    if (t) q.set('to', t);
    if (wait.value) q.set('wait', wait.value);
    if (template.value.trim()) q.set('template', template.value.trim());
    // A binding names the origin; otherwise the origin select's choice.
    if (binding.value.trim()) q.set('origin', `binding:${binding.value.trim()}`);
    else if (origin.value) q.set('origin', origin.value);
    if (search.value.trim()) q.set('q', search.value.trim());
    if (at) q.set('cursor', at);
    document.body.dataset.ready = 'loading';
    try {
      const { body } = await api<{ runs: RunRow[]; nextCursor?: string }>(`v1/console/runs?${q}`);
      tbody.replaceChildren(...body.runs.map(row));
      cursor = body.nextCursor;
      next.disabled = cursor === undefined;
      first.disabled = pageNo === 1;
      pageInfo.textContent = body.runs.length === 0 ? 'no runs match' : `page ${pageNo} · ${body.runs.length} runs${cursor ? '' : ' · last page'}`;
      setStatus(`${body.runs.length} runs shown`, 'ok');
    } catch (err) {
      setStatus((err as Error).message, 'error');
    }
    document.body.dataset.ready = 'idle';
  }

  function row(r: RunRow): HTMLTableRowElement {
    const waiting = [r.waiting.approvals ? `${r.waiting.approvals} approval` : '', r.waiting.attention ? `${r.waiting.attention} needs attention` : '', r.waitReason ?? ''].filter(Boolean).join(', ');
    const exportButton = el('button', { class: 'button secondary', type: 'button' }, 'Export');
    exportButton.addEventListener('click', () => void downloadExport(r.runId).catch((err) => setStatus((err as Error).message, 'error')));
    return el(
      'tr',
      { 'data-run': r.runId },
      el('td', { class: 'mono' }, el('a', { href: runPageUrl(r.runId) }, r.runId)),
      el('td', {}, el('span', { class: 'pill', 'data-status': r.status }, r.pausedReason ? `${r.status} (${r.pausedReason})` : r.status)),
      el('td', {}, time(r.createdAt)),
      el('td', {}, time(r.updatedAt)),
      el('td', {}, String(r.lastSeq)),
      el('td', { title: r.error?.message }, r.error ? r.error.code : waiting),
      el('td', {}, exportButton),
    );
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    pageNo = 1;
    void load(undefined);
  });
  next.addEventListener('click', () => {
    if (cursor === undefined) return;
    pageNo += 1;
    void load(cursor);
  });
  first.addEventListener('click', () => {
    pageNo = 1;
    void load(undefined);
  });
  void load(undefined);
}

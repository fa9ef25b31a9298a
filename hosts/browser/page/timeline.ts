// The journal as a paged table: only one page of rows is in the DOM, so a run of 100,000 events
// costs the same to show as one of 30. Filtering builds an index array once per filter change.
import type { Highlight, RunModel } from './run-model.js';

export const pageSize = 100;

export type TimelineFilter = { kind: 'all' } | { kind: 'business' } | { kind: 'highlights' } | { kind: 'node'; nodeId: string };

/**
 * Whether an event tells what the run did (run and node events) rather than how the host and
 * engine carried it out (checkpoints, edges, the calls behind a node's output): the business
 * view shows the former, and the infrastructure is one choice away.
 */
export function isBusinessEvent(type: string): boolean {
  return type.startsWith('run.') || type.startsWith('node.');
}

export class Timeline {
  private filter: TimelineFilter = { kind: 'all' };
  private indexes: number[] | undefined; // undefined: every event
  private page = 0;

  constructor(
    private readonly root: HTMLElement,
    private readonly model: RunModel,
    private readonly onPick: (event: any) => void,
  ) {
    root.querySelector<HTMLButtonElement>('[data-page=first]')!.onclick = () => this.show(0);
    root.querySelector<HTMLButtonElement>('[data-page=prev]')!.onclick = () => this.show(this.page - 1);
    root.querySelector<HTMLButtonElement>('[data-page=next]')!.onclick = () => this.show(this.page + 1);
    root.querySelector<HTMLButtonElement>('[data-page=last]')!.onclick = () => this.show(this.pages() - 1);
    const select = root.querySelector<HTMLSelectElement>('#timeline-filter')!;
    select.onchange = () => this.setFilter(select.value === 'highlights' || select.value === 'business' ? { kind: select.value } : { kind: 'all' });
    const jump = root.querySelector<HTMLFormElement>('#timeline-jump')!;
    jump.onsubmit = (ev) => {
      ev.preventDefault();
      const seq = Number(new FormData(jump).get('seq'));
      if (Number.isInteger(seq) && seq >= 1) this.showSeq(seq);
    };
  }

  private count(): number {
    return this.indexes ? this.indexes.length : this.model.exported.events.length;
  }

  private pages(): number {
    return Math.max(1, Math.ceil(this.count() / pageSize));
  }

  setFilter(filter: TimelineFilter): void {
    this.filter = filter;
    const events = this.model.exported.events;
    if (filter.kind === 'all') this.indexes = undefined;
    else if (filter.kind === 'business') {
      const out: number[] = [];
      for (let i = 0; i < events.length; i++) if (isBusinessEvent(String(events[i].type))) out.push(i);
      this.indexes = out;
    } else if (filter.kind === 'highlights') this.indexes = [...this.model.highlights.keys()].sort((a, b) => a - b).map((seq) => seq - 1);
    else {
      const out: number[] = [];
      for (let i = 0; i < events.length; i++) if (events[i].node?.id === filter.nodeId) out.push(i);
      this.indexes = out;
    }
    const select = this.root.querySelector<HTMLSelectElement>('#timeline-filter')!;
    const nodeOption = select.querySelector<HTMLOptionElement>('option[value=node]')!;
    nodeOption.hidden = filter.kind !== 'node';
    nodeOption.textContent = filter.kind === 'node' ? `node ${filter.nodeId}` : 'node';
    select.value = filter.kind;
    this.show(0);
  }

  /** Shows the page that holds `seq` (switching to all events when the filter hides it). */
  showSeq(seq: number): void {
    if (seq > this.model.exported.events.length) return;
    let at = this.indexes ? this.indexes.indexOf(seq - 1) : seq - 1;
    if (at < 0) {
      this.setFilter({ kind: 'all' });
      at = seq - 1;
    }
    this.show(Math.floor(at / pageSize), seq);
  }

  show(page: number, mark?: number): void {
    this.page = Math.min(Math.max(0, page), this.pages() - 1);
    const events = this.model.exported.events;
    const body = this.root.querySelector('tbody')!;
    body.textContent = '';
    const start = this.page * pageSize;
    const end = Math.min(this.count(), start + pageSize);
    const fragment = document.createDocumentFragment();
    for (let i = start; i < end; i++) {
      const e = events[this.indexes ? this.indexes[i] : i];
      fragment.appendChild(this.row(e, this.model.highlights.get(e.seq), e.seq === mark));
    }
    body.appendChild(fragment);
    const total = this.count();
    this.root.querySelector('#timeline-position')!.textContent =
      total === 0 ? 'no events' : `${start + 1}–${end} of ${total.toLocaleString('en')} · page ${this.page + 1} of ${this.pages().toLocaleString('en')}`;
    this.root.querySelector<HTMLButtonElement>('[data-page=first]')!.disabled = this.page === 0;
    this.root.querySelector<HTMLButtonElement>('[data-page=prev]')!.disabled = this.page === 0;
    this.root.querySelector<HTMLButtonElement>('[data-page=next]')!.disabled = this.page >= this.pages() - 1;
    this.root.querySelector<HTMLButtonElement>('[data-page=last]')!.disabled = this.page >= this.pages() - 1;
    if (mark !== undefined) body.querySelector('tr.marked')?.scrollIntoView({ block: 'nearest' });
  }

  private row(e: any, highlight: Highlight, marked: boolean): HTMLTableRowElement {
    const tr = document.createElement('tr');
    tr.dataset.seq = String(e.seq);
    if (highlight) tr.classList.add(`hl-${highlight}`);
    if (marked) tr.classList.add('marked');
    const node = e.node ? `${e.node.id}${e.node.item !== undefined ? `[${e.node.item}]` : ''}${e.node.attempt > 0 ? ` #${e.node.attempt}` : ''}` : '';
    const cells = [String(e.seq), timeOf(e.occurredAt), e.type, node, summaryOf(e)];
    cells.forEach((text, i) => {
      const td = document.createElement('td');
      td.textContent = text;
      if (i === 2) td.className = `type type-${String(e.type).split('.')[0]}`;
      tr.appendChild(td);
    });
    tr.onclick = () => this.onPick(e);
    return tr;
  }
}

/** `2026-12-01 02:13:18.123` (UTC, as the journal records it) of an ISO time. */
function timeOf(iso: string): string {
  return typeof iso === 'string' && iso.length >= 23 ? `${iso.slice(0, 10)} ${iso.slice(11, 23)}` : String(iso);
}

/** Epoch milliseconds this late are dates (2001 on); smaller numbers under an `…At` key are left alone. */
const epochMsMin = 1e12;

/**
 * A copy of a journal value where the times the engine records as epoch milliseconds
 * (`timeoutAt`, `retryAt`, `deadlineAt`, `wakeAt`, …) are ISO date-times instead.
 */
export function withReadableTimes(value: unknown, key = ''): unknown {
  if (typeof value === 'number' && /At$/.test(key) && Number.isFinite(value) && value >= epochMsMin && value < 8.64e15) return new Date(value).toISOString();
  if (Array.isArray(value)) return value.map((v) => withReadableTimes(v));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, withReadableTimes(v, k)]));
  return value;
}

function summaryOf(e: any): string {
  const p = (withReadableTimes(e.payload ?? {}) ?? {}) as any;
  switch (e.type) {
    case 'edge.taken':
    case 'edge.skipped':
      return `${p.from} → ${p.to}${p.port !== undefined ? ` (${p.port})` : ''}`;
    case 'capability.requested':
      return `${p.kind}:${p.name} · ${p.effect}`;
    case 'capability.completed':
    case 'capability.late':
      return p.ok ? `ok ${short(p.output)}` : `error ${p.error?.code ?? ''}: ${p.error?.message ?? ''}`;
    case 'node.failed':
    case 'run.failed':
    case 'node.item-failed':
      return `${p.error?.code ?? ''}: ${p.error?.message ?? ''}`;
    case 'node.agent-turn': {
      const calls = p.message?.toolCalls?.length ?? 0;
      return `turn ${p.turn} · ${calls === 0 ? 'answer' : `${calls} tool call${calls === 1 ? '' : 's'}`} · ${p.usage?.inputTokens} in / ${p.usage?.outputTokens} out`;
    }
    case 'node.agent-tool-result':
      return `${p.toolName} (${p.toolCallId}) · ${p.refused ? 'refused' : p.error ? `error ${p.error.code}` : `ok ${short(p.output)}`}`;
    case 'node.agent-answer-invalid':
      return `turn ${p.turn}: ${p.problem}`;
    case 'node.waiting':
    case 'run.paused':
      return String(p.reason ?? '');
    default:
      return Object.keys(p).length === 0 ? '' : short(p);
  }
}

function short(value: unknown): string {
  const text = JSON.stringify(value) ?? '';
  return text.length > 110 ? `${text.slice(0, 109)}…` : text;
}

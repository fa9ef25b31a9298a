// The replay page: opens a run export (file picker, drag and drop, or `?src=` on the same origin),
// draws its graph and journal, and replays it in `inspect` or `recorded` mode with the engine
// component. The last replay report is kept verbatim in <pre id="replay-report"> (the JSON the
// Node host prints for `replay --from <file>`, without the CLI envelope). Served by the HTTP API of
// `agent-workflow serve --http` (under /page/), `?run=<id>` follows a run live: the graph and the
// journal grow as its events commit, and the page switches to replay when the run ends
// (live-follow.ts).
import type { ReplayMode } from '../index.js';
import { inlineWasmGlobal } from '../component.js';
import { openExportArtifacts, parseExportText, sealedKeyIds, type RunExport } from '../journal.js';
import { renderDag } from './dag-view.js';
import { h, jsonBlock, renderNodePanel } from './node-panel.js';
import { createReplayer, type Replayer } from './replayer.js';
import { applyInspect, buildRunModel, type RunModel } from './run-model.js';
import { Timeline, withReadableTimes, type TimelineFilter } from './timeline.js';
import { authHeaders, followEvents, liveStatusOf, type LiveEvent, type LiveSource } from './live-follow.js';

const $ = <T extends HTMLElement = HTMLElement>(selector: string) => document.querySelector<T>(selector)!;

interface PageState {
  /** Runs the component: in a worker over http(s), in the page from file:// (replayer.ts). */
  host: Promise<Replayer>;
  model?: RunModel;
  selected?: string;
  timeline?: Timeline;
  busy: boolean;
  /** Set while the page follows a run that is still going. */
  following?: boolean;
}

let page: PageState;

function setStatus(text: string, kind: 'info' | 'error' | 'ok' = 'info'): void {
  const status = $('#status');
  status.textContent = text;
  status.dataset.kind = kind;
}

function loadClassicScript(src: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = src;
    s.onload = () => resolve();
    s.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.appendChild(s);
  });
}

function selectNode(id: string | undefined): void {
  const model = page.model;
  if (!model) return;
  page.selected = id;
  document.querySelectorAll('#dag g.node').forEach((g) => g.classList.toggle('selected', g.getAttribute('data-node') === id));
  renderNodePanel(
    $('#node-panel-body'),
    id ? model.nodes.get(id) : undefined,
    (nodeId) => page.timeline?.setFilter({ kind: 'node', nodeId }),
    (seq) => page.timeline?.showSeq(seq),
  );
}

function renderGraph(): void {
  const model = page.model!;
  renderDag($('#dag-container'), model, page.selected, selectNode);
}

function renderRun(model: RunModel): void {
  $('#run-id').textContent = model.runId;
  $('#run-workflow').textContent = model.workflowId;
  $('#run-events').textContent = model.exported.events.length.toLocaleString('en');
  const o = model.outcome;
  const badge = $('#run-status');
  badge.textContent = o.pausedReason ? `${o.status} (${o.pausedReason})` : o.status;
  badge.className = `pill run-${o.status}`;
  const result = $('#result-body');
  result.textContent = '';
  if (o.output !== undefined) result.append(h('h4', {}, 'Output'), jsonBlock(o.output));
  if (o.error !== undefined) result.append(h('h4', {}, 'Error'), jsonBlock(o.error, 'json error'));
  if (o.output === undefined && o.error === undefined) result.append(h('p', { class: 'muted' }, o.status === 'paused' ? `The run is paused (${o.pausedReason ?? 'waiting'}); it has no result yet.` : 'The run has no result.'));
  // What the run waits for, as the engine projects it (known once inspect has answered).
  const p = model.projection;
  const flags = $('#run-flags');
  flags.textContent = '';
  if (!p) return;
  const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  // Counted once per node (or foreach item) and per invocation, however many events tell of it.
  const attention = distinct(p.attention ?? [], (a) => `${a.nodeId}\u0000${a.item ?? ''}`);
  const approvals = distinct(p.approvals ?? [], (a) => a.invocationId);
  const calls = distinct((p.calls ?? []).filter((c) => c.kind !== 'approval'), (c) => c.invocationId);
  if (attention.length > 0) flags.append(h('span', { class: 'flag hl-unknown', title: attention.map((a) => (a.item !== undefined ? `${a.nodeId}[${a.item}]` : a.nodeId)).join(', ') }, `${plural(attention.length, 'unknown outcome')}`));
  if (approvals.length > 0) flags.append(h('span', { class: 'flag hl-approval', title: approvals.map((a) => a.nodeId).join(', ') }, `${plural(approvals.length, 'waiting approval')}`));
  if (calls.length > 0) flags.append(h('span', { class: 'flag', title: calls.map((c) => `${c.nodeId}: ${c.kind}:${c.name} (${c.effect})`).join('\n') }, `${plural(calls.length, 'call')} in flight`));
  // What the run's agent loops used, every attempt counted.
  if (p.usage) flags.append(h('span', { class: 'flag', id: 'run-usage', title: Object.entries(p.usage.nodes).map(([id, u]) => `${id}: ${plural(u.turns, 'turn')}, ${u.inputTokens} in / ${u.outputTokens} out`).join('\n') }, `${plural(p.usage.turns, 'model turn')} · ${p.usage.inputTokens + p.usage.outputTokens} tokens`));
  if (attention.length > 0 && o.status === 'paused') result.append(nextStepHint(model.runId, attention));
}

function distinct<T>(items: T[], key: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** Shell-quotes an argument for the commands the page suggests. */
function shellArg(text: string): string {
  return /^[A-Za-z0-9._:@%+=,/-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** What to do about unknown outcomes: the exact `agent-workflow resolve` commands. */
function nextStepHint(runId: string, attention: { nodeId: string; item?: number }[]): HTMLElement {
  const lines: string[] = [];
  for (const a of attention) {
    const base = `agent-workflow resolve ${shellArg(runId)} ${shellArg(a.nodeId)}${a.item !== undefined ? ` --item ${a.item}` : ''}`;
    lines.push(
      `# ${a.item !== undefined ? `${a.nodeId}[${a.item}]` : a.nodeId}: did its call take effect? Check the system it called, then one of:`,
      `${base} --succeeded '<output JSON>'   # it did: record what it produced`,
      `${base} --retry                       # it did not: call it again`,
      `${base} --fail '<reason>'             # give up on it: the node fails`,
    );
  }
  return h(
    'div',
    { class: 'next-step' },
    h('h4', {}, 'Next step'),
    h('p', {}, 'The outcome of a call is unknown (the host lost track of it), so the run is paused until someone settles it:'),
    h('pre', { class: 'json hint', id: 'next-step' }, lines.join('\n')),
  );
}

function showReport(mode: ReplayMode, text: string, report: Record<string, any>, ms: number): void {
  const pre = $('#replay-report');
  pre.textContent = text;
  (globalThis as Record<string, unknown>).__lastReplay = { mode, ms };
  pre.dataset.mode = mode;
  pre.dataset.count = String(Number(pre.dataset.count ?? 0) + 1);
  const verdict = $('#replay-verdict');
  verdict.textContent = '';
  $('#divergence-wrap').textContent = '';
  const took = `${ms.toFixed(0)} ms`;
  if (mode === 'inspect') {
    verdict.className = 'verdict info';
    verdict.append(`inspect: state rebuilt from ${report.events} events (${took}), run ${report.outcome?.status ?? '?'}`);
  } else if (report.identical) {
    verdict.className = 'verdict ok';
    verdict.append(`recorded: identical — ${report.eventsReplayed} of ${report.eventsRecorded} events reproduced (${took})`);
  } else {
    verdict.className = 'verdict bad';
    const d = report.firstDivergence;
    verdict.append(`recorded: diverged at event ${d?.seq ?? '?'}${d?.nodeId ? ` (node ${d.nodeId})` : ''} (${took}) `);
    if (d?.seq) {
      const link = h('button', { type: 'button', class: 'link' }, 'show in timeline');
      link.onclick = () => page.timeline?.showSeq(d.seq);
      verdict.append(link);
    }
    if (d) $('#divergence-wrap').append(divergenceTable(d));
  }
  $('#replay-pretty').textContent = JSON.stringify(report, null, 2);
}

/** Rows of a divergence shown at most. */
const divergenceRowsMax = 60;

/** The leaves of a JSON value by dotted path (`payload.output.price`); arrays by index. */
function leaves(value: unknown, path: string, out: Map<string, unknown>): void {
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) out.set(path, value);
    for (const [k, v] of entries) leaves(v, path ? `${path}.${k}` : k, out);
  } else out.set(path, value);
}

/** The recorded and the replayed event of a divergence, side by side: only the paths that differ. */
function divergenceTable(d: { seq?: number; recorded?: unknown; replayed?: unknown }): HTMLElement {
  const a = new Map<string, unknown>();
  const b = new Map<string, unknown>();
  leaves(d.recorded ?? null, '', a);
  leaves(d.replayed ?? null, '', b);
  const show = (m: Map<string, unknown>, path: string) => (m.has(path) ? JSON.stringify(m.get(path)) : '(absent)');
  const paths = [...new Set([...a.keys(), ...b.keys()])].filter((path) => show(a, path) !== show(b, path));
  const body = h('tbody');
  for (const path of paths.slice(0, divergenceRowsMax)) body.append(h('tr', {}, h('td', { class: 'path' }, path || '(event)'), h('td', { class: 'recorded' }, show(a, path)), h('td', { class: 'replayed' }, show(b, path))));
  const table = h('table', { id: 'divergence', class: 'divergence' }, h('thead', {}, h('tr', {}, h('th', {}, `event ${d.seq ?? '?'}`), h('th', {}, 'recorded'), h('th', {}, 'replayed'))), body);
  const wrap = h('div', { class: 'table-wrap divergence-wrap' }, table);
  if (paths.length > divergenceRowsMax) wrap.append(h('p', { class: 'muted small' }, `… ${paths.length - divergenceRowsMax} more differences in the report`));
  return wrap;
}

async function runReplay(mode: ReplayMode): Promise<void> {
  const model = page.model;
  if (!model || page.busy) return;
  page.busy = true;
  setButtons();
  setStatus(`${mode} replay…`);
  try {
    const host = await page.host;
    const t0 = performance.now();
    const text = await host.replay(mode);
    const ms = performance.now() - t0;
    if (page.model !== model) return; // another export was opened meanwhile
    const report = JSON.parse(text) as Record<string, any>;
    if (mode === 'inspect') {
      applyInspect(model, report);
      renderRun(model);
      renderGraph();
      selectNode(page.selected);
    }
    showReport(mode, text, report, ms);
    setStatus(`${mode} replay done`, 'ok');
  } catch (err) {
    setStatus(`${mode} replay failed: ${(err as Error).message}`, 'error');
    throw err;
  } finally {
    page.busy = false;
    setButtons();
  }
}

function setButtons(): void {
  for (const id of ['#replay-inspect', '#replay-recorded']) $<HTMLButtonElement>(id).disabled = !page.model || page.busy || page.following === true;
}

async function openExport(text: string, name: string): Promise<void> {
  let exported: RunExport;
  try {
    exported = parseExportText(text);
  } catch (err) {
    setStatus(`${name}: ${(err as Error).message}`, 'error');
    document.body.dataset.ready = 'error';
    return;
  }
  showSealed(exported, name);
  const model = buildRunModel(exported);
  page.model = model;
  page.selected = undefined;
  document.body.classList.add('loaded');
  $('#source-name').textContent = name;
  renderRun(model);
  renderGraph();
  selectNode(undefined);
  page.timeline = newTimeline(model);
  page.timeline.setFilter(initialFilter());
  $('#replay-report').textContent = '';
  delete $('#replay-report').dataset.mode;
  setButtons();
  (await page.host).load(text, exported);
  // Node states and the outcome come from the component's inspect replay.
  await runReplay('inspect');
  document.body.dataset.ready = '1';
  document.body.dataset.loads = String(Number(document.body.dataset.loads ?? 0) + 1);
  (globalThis as Record<string, unknown>).__pageReadyMs = performance.now();
}

/**
 * An export whose artifacts are sealed (the store encrypts them at rest): inspection works as it
 * is; the recorded replay needs them opened, with a key the person types here. The key and the
 * opened bytes stay in this page (WebCrypto); nothing is sent anywhere.
 */
function showSealed(exported: RunExport, name: string): void {
  const form = $<HTMLFormElement>('#artifact-key');
  const ids = sealedKeyIds(exported);
  form.hidden = ids.length === 0;
  if (ids.length === 0) return;
  const count = Object.values(exported.artifacts).filter((a) => a.sealed).length;
  $('#artifact-key-info').textContent = `${count} artifact${count === 1 ? ' is' : 's are'} sealed under key ${ids.join(', ')}: give the key to open them in this page for a recorded replay.`;
  form.onsubmit = (ev) => {
    ev.preventDefault();
    void openSealed(exported, name, $<HTMLInputElement>('#artifact-key-input').value.trim(), ids);
  };
}

function base64Key(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  if (bytes.length !== 32) throw new Error(`a key is 32 bytes; this one has ${bytes.length}`);
  return bytes;
}

async function openSealed(exported: RunExport, name: string, text: string, ids: string[]): Promise<void> {
  try {
    // `kid:base64,…` names each key; a bare key is the one of the single key id.
    const keys = new Map<string, Uint8Array>();
    if (text.includes(':')) for (const part of text.split(',')) keys.set(part.slice(0, part.indexOf(':')).trim(), base64Key(part.slice(part.indexOf(':') + 1).trim()));
    else if (ids.length === 1) keys.set(ids[0]!, base64Key(text));
    else throw new Error(`this export has keys ${ids.join(', ')}: give each as kid:base64`);
    const opened = await openExportArtifacts(exported, (kid) => keys.get(kid));
    $<HTMLInputElement>('#artifact-key-input').value = '';
    await openExport(JSON.stringify(opened), name);
    setStatus('artifacts opened in this page', 'ok');
  } catch (err) {
    setStatus(`the artifacts did not open: ${(err as Error).message}`, 'error');
  }
}

/** `?events=business` (the console's links) opens the journal on run and node events only. */
function initialFilter(): TimelineFilter {
  return new URLSearchParams(location.search).get('events') === 'business' ? { kind: 'business' } : { kind: 'all' };
}

function newTimeline(model: RunModel): Timeline {
  return new Timeline($('#timeline'), model, (e) => {
    if (e.node?.id && page.model?.nodes.has(e.node.id)) selectNode(e.node.id);
    $('#event-detail').textContent = JSON.stringify(withReadableTimes(e), null, 2);
  });
}

/** Fetches the run's export from the HTTP API the page is served by. */
async function fetchRunExport(source: LiveSource): Promise<string | undefined> {
  const response = await fetch(`../v1/runs/${encodeURIComponent(source.runId)}/export`, { headers: authHeaders(source), cache: 'no-store' });
  if (!response.ok) {
    let detail = `HTTP ${response.status}`;
    try {
      const body = (await response.json()) as { error?: { code?: string; message?: string } };
      if (body.error) detail = `${body.error.code}: ${body.error.message}`;
    } catch {
      // not JSON: the status says it
    }
    setStatus(`run ${source.runId}: ${detail}`, 'error');
    document.body.dataset.ready = 'error';
    return undefined;
  }
  return response.text();
}

/**
 * Opens a run through the HTTP API and, while it is not over, follows it: new events are added
 * to the journal and the graph as they commit (redrawn at most every `liveRedrawMs`); when the
 * run ends the page opens its final export and replays it, as for any export.
 */
async function openLive(source: LiveSource): Promise<void> {
  setStatus(`fetching run ${source.runId}…`);
  const text = await fetchRunExport(source);
  if (text === undefined) return;
  await openExport(text, `run ${source.runId}`);
  const model = page.model;
  if (!model || ['completed', 'failed', 'cancelled'].includes(model.exported.run.status)) return;
  page.following = true;
  setButtons();
  document.body.dataset.live = 'following';
  document.body.classList.add('live');
  let status: { status: string; pausedReason?: string } = { status: model.outcome.status, ...(model.outcome.pausedReason ? { pausedReason: model.outcome.pausedReason } : {}) };
  const pending: LiveEvent[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const redraw = () => {
    timer = undefined;
    if (pending.length === 0) return;
    const exported = model.exported;
    for (const e of pending.splice(0)) {
      (exported.events as unknown[]).push(e);
      status = liveStatusOf(status, e);
    }
    (exported.run as { status: string }).status = status.status;
    const next = buildRunModel(exported);
    next.outcome = { ...status };
    page.model = next;
    renderRun(next);
    renderGraph();
    selectNode(page.selected);
    // The journal shows its newest page while the run goes on.
    page.timeline = newTimeline(next);
    page.timeline.setFilter(initialFilter());
    page.timeline.show(Number.MAX_SAFE_INTEGER);
    document.body.dataset.liveSeq = String(exported.events.length);
    setStatus(`following run ${source.runId}: ${exported.events.length.toLocaleString('en')} events, ${status.status}`);
  };
  setStatus(`following run ${source.runId}…`);
  const stop = new AbortController();
  const ended = await followEvents(
    source,
    model.exported.events.length,
    (events) => {
      pending.push(...events);
      timer ??= setTimeout(redraw, liveRedrawMs);
    },
    stop.signal,
  );
  if (timer) clearTimeout(timer);
  redraw();
  page.following = false;
  if (!ended) return;
  // The run is over: its final export (with every artifact) is opened and replayed like any export.
  const final = await fetchRunExport(source);
  if (final === undefined) return;
  await openExport(final, `run ${source.runId}`);
  document.body.classList.remove('live');
  document.body.dataset.live = 'ended';
  setStatus(`run ${source.runId} ended (${page.model?.outcome.status ?? '?'}): replaying the journal`, 'ok');
}

/** Live events are drawn in batches at most this often. */
const liveRedrawMs = 150;

async function openFile(file: File): Promise<void> {
  setStatus(`reading ${file.name}…`);
  await openExport(await file.text(), file.name);
}

async function openUrl(src: string): Promise<void> {
  const url = new URL(src, location.href);
  if (url.origin !== location.origin) {
    setStatus(`?src= must be on this page's origin (${location.origin})`, 'error');
    return;
  }
  setStatus(`fetching ${url.pathname}…`);
  const response = await fetch(url, { credentials: 'same-origin' });
  if (!response.ok) {
    setStatus(`${url.pathname}: HTTP ${response.status}`, 'error');
    return;
  }
  await openExport(await response.text(), url.pathname);
}

function wire(): void {
  const input = $<HTMLInputElement>('#file-input');
  input.onchange = () => {
    const file = input.files?.[0];
    if (file) void openFile(file);
    input.value = '';
  };
  $('#replay-inspect').onclick = () => void runReplay('inspect');
  $('#replay-recorded').onclick = () => void runReplay('recorded');
  let depth = 0;
  document.addEventListener('dragenter', (e) => {
    e.preventDefault();
    depth += 1;
    document.body.classList.add('dragging');
  });
  document.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) document.body.classList.remove('dragging');
  });
  document.addEventListener('dragover', (e) => e.preventDefault());
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    depth = 0;
    document.body.classList.remove('dragging');
    const file = e.dataTransfer?.files?.[0];
    if (file) void openFile(file);
  });
}

async function boot(): Promise<void> {
  wire();
  // From file:// Chromium refuses fetch(); the wasm binaries then come from a classic script.
  if (location.protocol === 'file:' && !(inlineWasmGlobal in globalThis)) await loadClassicScript('wasm-inline.js');
  const inline = (globalThis as Record<string, unknown>)[inlineWasmGlobal] as Record<string, string> | undefined;
  const host = createReplayer(new URL('wasm/', document.baseURI), inline && typeof inline === 'object' ? inline : undefined);
  page = { host, busy: false };
  setButtons();
  host.then(
    (hst) => {
      $('#engine-info').textContent = `engine ${String(hst.engineDescription.engineVersion ?? '')} · wasm ready in ${hst.warmupMs.toFixed(0)} ms (${hst.where === 'worker' ? 'in a worker' : 'in the page'})`;
      document.body.dataset.replayer = hst.where;
    },
    (err) => setStatus(`the engine could not be loaded: ${(err as Error).message}`, 'error'),
  );
  const params = new URLSearchParams(location.search);
  const src = params.get('src');
  const run = params.get('run');
  if (run) {
    // The API token, if any, comes in the fragment (never sent to a server, never in a log).
    const token = new URLSearchParams(location.hash.slice(1)).get('token') ?? undefined;
    await openLive({ runId: run, ...(token ? { token } : {}) });
  } else if (src) await openUrl(src);
  else {
    setStatus('open a run export (agent-workflow export <run-id> --out run.json)');
    await host;
    document.body.dataset.ready = 'idle';
  }
}

boot().catch((err) => {
  setStatus(`error: ${(err as Error).message}`, 'error');
  document.body.dataset.ready = 'error';
});

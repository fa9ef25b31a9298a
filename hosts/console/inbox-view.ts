// The inbox: runs waiting for a person. Approvals (approve or reject, with a comment) and
// needs_attention nodes (resolve as succeeded with its output, retry, or fail with a reason).
// Each item shows the CLI command that does the same; after an action the item follows its run
// live (the run's Server-Sent Events) until it ends or waits again.
import { followEvents, liveStatusOf } from '../browser/page/live-follow.js';
import { ApiError, api, el, runPageUrl, setStatus, time, token } from './api.js';
// The server's shape of an inbox item (a type only: nothing of the server is bundled).
import type { InboxItem } from '../node/http/console-inbox.js';

type ActionAnswer = { applied: boolean; cli: string; outcome?: { status: string } };

export async function showInbox(root: HTMLElement, role: string, principal: string): Promise<void> {
  const list = el('div', { id: 'inbox' });
  // Who acts is the token's principal, recorded by the server (the engine checks it against the
  // approvers a node allows); the page only says who that is.
  root.replaceChildren(el('div', { class: 'card row' }, 'Acting as ', el('strong', { id: 'acting-as' }, principal)), list);
  const { body } = await api<{ items: InboxItem[] }>('v1/console/inbox');
  if (body.items.length === 0) list.append(el('p', { class: 'card muted', id: 'inbox-empty' }, 'Nothing waits for a person.'));
  for (const item of body.items) list.append(card(item, role === 'operator'));
  setStatus(`${body.items.length} waiting`, 'ok');
}

function describe(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function card(item: InboxItem, canAct: boolean): HTMLElement {
  const result = el('div', { class: 'result' });
  const live = el('div', { class: 'live muted' });
  const cli = el('code', { class: 'cli' }, Object.values(item.cli).join('\n'));
  const title = el(
    'h3',
    {},
    el('span', { class: 'pill', 'data-status': 'paused' }, item.kind === 'approval' ? 'approval' : 'needs attention'),
    el('span', { class: 'mono' }, item.nodeId + (item.item !== undefined ? ` [${item.item}]` : '')),
    el('a', { class: 'mono small', href: runPageUrl(item.runId) }, item.runId),
  );
  const box = el('section', { class: 'card item', 'data-kind': item.kind, 'data-run': item.runId, 'data-node': item.nodeId, ...(item.item !== undefined ? { 'data-item': String(item.item) } : {}) }, title);
  box.append(el('div', { class: 'muted small' }, `waiting since ${time(item.since)}`));
  const buttons: HTMLButtonElement[] = [];
  const button = (label: string, cls: string, action: () => { path: string; body: Record<string, unknown> }) => {
    const b = el('button', { class: `button ${cls}`, type: 'button', 'data-action': label.toLowerCase() }, label);
    b.disabled = !canAct;
    if (!canAct) b.title = 'this token may only read';
    b.addEventListener('click', () => {
      let request: { path: string; body: Record<string, unknown> };
      try {
        request = action();
      } catch (err) {
        result.dataset.kind = 'error';
        result.textContent = (err as Error).message;
        return;
      }
      void run(request);
    });
    buttons.push(b);
    return b;
  };
  async function run(a: { path: string; body: Record<string, unknown> }) {
    for (const b of buttons) b.disabled = true;
    // Following starts before the action, so the events it causes come over the run's stream.
    const stop = new AbortController();
    try {
      await follow(item.runId, live, stop.signal);
      const { body } = await api<ActionAnswer>(a.path, { method: 'POST', body: a.body });
      result.dataset.kind = 'ok';
      result.textContent = body.applied ? `done: the run is ${body.outcome?.status}` : 'committed to the run inbox: its owner applies it';
      cli.textContent = body.cli;
      box.dataset.done = 'true';
    } catch (err) {
      stop.abort();
      result.dataset.kind = 'error';
      result.textContent = err instanceof ApiError ? `${err.code}: ${err.message}` : (err as Error).message;
      for (const b of buttons) b.disabled = !canAct;
    }
  }
  const path = (verb: string) => `v1/console/runs/${encodeURIComponent(item.runId)}/${verb}`;
  // An action names the item and the unknown shown (refused by the server if the run has moved on).
  const at = { ...(item.item !== undefined ? { item: item.item } : {}), ...(item.attentionSeq !== undefined ? { attentionSeq: item.attentionSeq } : {}) };
  if (item.kind === 'approval') {
    if (item.prompt !== undefined) box.append(el('p', { class: 'prompt' }, describe(item.prompt)));
    if (item.approvers !== undefined) box.append(el('div', { class: 'muted small' }, `approvers: ${describe(item.approvers)}`));
    const comment = el('textarea', { class: 'comment', placeholder: 'comment (optional)' });
    box.append(
      comment,
      el(
        'div',
        { class: 'row' },
        button('Approve', '', () => ({ path: path('approve'), body: { nodeId: item.nodeId, approved: true, ...(comment.value ? { comment: comment.value } : {}) } })),
        button('Reject', 'bad', () => ({ path: path('approve'), body: { nodeId: item.nodeId, approved: false, ...(comment.value ? { comment: comment.value } : {}) } })),
      ),
    );
  } else {
    if (item.evidence !== undefined) box.append(el('div', { class: 'muted small' }, 'Evidence (the call whose outcome is unknown):'), el('pre', { class: 'evidence' }, JSON.stringify(item.evidence, null, 2)));
    const output = el('textarea', { class: 'output', placeholder: 'the output it produced, as JSON (for Succeeded)' });
    const reason = el('input', { class: 'reason', placeholder: 'reason (for Fail)' });
    box.append(
      output,
      el(
        'div',
        { class: 'row' },
        button('Succeeded', '', () => {
          let parsed: unknown;
          try {
            parsed = JSON.parse(output.value || 'null');
          } catch {
            throw new Error('the output is not JSON');
          }
          return { path: path('resolve'), body: { nodeId: item.nodeId, ...at, resolution: 'succeeded', output: parsed } };
        }),
        button('Retry', 'secondary', () => ({ path: path('resolve'), body: { nodeId: item.nodeId, ...at, resolution: 'retry' } })),
        reason,
        button('Fail', 'bad', () => ({ path: path('resolve'), body: { nodeId: item.nodeId, ...at, resolution: 'fail', reason: reason.value || 'resolved as failed from the console' } })),
      ),
    );
  }
  box.append(el('div', { class: 'muted small' }, 'The same from the CLI:'), cli, result, live);
  return box;
}

/**
 * Shows the run's status as its events commit, until it ends (or `signal` stops it). Resolves once
 * the run's last seq is read, so that every event committed after that is shown.
 */
async function follow(runId: string, live: HTMLElement, signal: AbortSignal): Promise<void> {
  let state: { status: string; pausedReason?: string } = { status: 'paused' };
  const t = token();
  const { body } = await api<{ lastSeq: number; status: string; pausedReason?: string }>(`v1/runs/${encodeURIComponent(runId)}`);
  state = { status: body.status, ...(body.pausedReason ? { pausedReason: body.pausedReason } : {}) };
  const show = (seq: number, type: string) => {
    live.textContent = `live: seq ${seq} ${type} · run ${state.status}`;
    live.dataset.status = state.status;
  };
  show(body.lastSeq, 'read');
  // Ended already: there is nothing to follow (events after its last seq never come).
  if (['completed', 'failed', 'cancelled'].includes(body.status)) return;
  void followEvents({ runId, ...(t ? { token: t } : {}) }, body.lastSeq, (events) => {
    for (const e of events) {
      state = liveStatusOf(state, e);
      show(e.seq, e.type);
      // Only the stream sets this: the run's end was seen live, not read afterwards.
      if (e.type === 'run.completed' || e.type === 'run.failed' || e.type === 'run.cancelled') live.dataset.endedBy = e.type;
    }
  }, signal);
}

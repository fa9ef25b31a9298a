// The catalog: workflows, a workflow's published revisions and the semantic diff of two of them,
// and its draft in a JSON editor validated live by the engine (its errors at their JSON pointers),
// saved with compare-and-set on the draft revision and published (operator token only).
import { ApiError, api, el, setStatus, time } from './api.js';
import { nodeForm } from './node-form.js';
import { edgeGraph } from './edge-graph.js';

interface Hit {
  id: string;
  name?: string;
  description?: string;
  draftRevision?: number;
  revisions: number[];
}

interface Entry {
  id: string;
  draft?: { draftRevision: number; lastRevision: number; updatedAt: number; updatedBy: string; template: unknown };
  revisions: { revision: number; semanticHash: string; draftRevision: number; publishedAt: number; publishedBy: string }[];
}

interface Report {
  ok: boolean;
  errors: { code: string; pointer: string; message: string }[];
  semanticHash?: string;
}

export async function showCatalog(root: HTMLElement, role: string): Promise<void> {
  const id = new URLSearchParams(location.search).get('id');
  if (id) return showWorkflow(root, id, role);
  const { body } = await api<{ workflows: Hit[] }>('v1/console/catalog');
  const rows = body.workflows.map((w) =>
    el(
      'tr',
      { 'data-workflow': w.id },
      el('td', { class: 'mono' }, el('a', { href: `?view=catalog&id=${encodeURIComponent(w.id)}` }, w.id)),
      el('td', {}, w.name ?? ''),
      el('td', {}, w.revisions.length ? w.revisions.map((r) => `@${r}`).join(' ') : '—'),
      el('td', {}, w.draftRevision !== undefined ? `draft ${w.draftRevision}` : ''),
      el('td', { class: 'small' }, w.description ?? ''),
    ),
  );
  root.replaceChildren(el('section', { class: 'card' }, el('h2', {}, 'Workflows'), el('table', { id: 'workflows' }, el('thead', {}, el('tr', {}, ...['Workflow', 'Name', 'Revisions', 'Draft', 'Description'].map((h) => el('th', {}, h)))), el('tbody', {}, ...rows))));
  setStatus(`${rows.length} workflows`, 'ok');
}

async function showWorkflow(root: HTMLElement, id: string, role: string): Promise<void> {
  const { body: entry } = await api<Entry>(`v1/console/catalog/${encodeURIComponent(id)}`);
  const revisionRows = entry.revisions.map((r) => el('tr', { 'data-revision': String(r.revision) }, el('td', { class: 'mono' }, `${id}@${r.revision}`), el('td', { class: 'mono small' }, r.semanticHash.slice(0, 19)), el('td', {}, `draft ${r.draftRevision}`), el('td', {}, time(r.publishedAt)), el('td', {}, r.publishedBy)));
  const options = () => entry.revisions.map((r) => el('option', { value: String(r.revision) }, `@${r.revision}`));
  const a = el('select', { id: 'diff-a' }, ...options());
  const b = el('select', { id: 'diff-b' }, ...options());
  if (entry.revisions.length > 1) b.value = String(entry.revisions.at(-1)!.revision);
  const diffOut = el('ul', { id: 'diff' });
  const compare = el('button', { class: 'button secondary', type: 'button', id: 'compare' }, 'Compare');
  compare.disabled = entry.revisions.length < 2;
  compare.addEventListener('click', async () => {
    const { body } = await api<{ same: boolean; changes: { op: string; pointer: string; before?: unknown; after?: unknown }[] }>(`v1/console/catalog/${encodeURIComponent(id)}/diff?a=${a.value}&b=${b.value}`);
    diffOut.replaceChildren(...(body.same ? [el('li', { class: 'muted' }, 'semantically the same')] : body.changes.map((c) => el('li', { 'data-op': c.op, 'data-pointer': c.pointer }, el('code', {}, c.pointer), ` ${c.op}: ${c.before !== undefined ? JSON.stringify(c.before) : ''}${c.op === 'replace' ? ' → ' : ''}${c.after !== undefined ? JSON.stringify(c.after) : ''}`))));
    diffOut.dataset.ready = 'true';
  });

  // The draft editor: the JSON is the only model; the engine says what is wrong and where.
  let draftRevision = entry.draft?.draftRevision ?? 0;
  const source = entry.draft?.template ?? (entry.revisions.length ? undefined : { metadata: { id } });
  const editor = el('textarea', { id: 'draft-json', spellcheck: 'false', class: 'mono' });
  editor.value = source !== undefined ? JSON.stringify(source, null, 2) : '';
  const validation = el('ul', { id: 'validation' });
  const draftInfo = el('span', { id: 'draft-info', class: 'muted small' });
  const save = el('button', { class: 'button', type: 'button', id: 'save' }, 'Save draft');
  const publish = el('button', { class: 'button secondary', type: 'button', id: 'publish' }, 'Publish');
  const actionResult = el('div', { class: 'result', id: 'draft-result' });
  for (const button of [save, publish]) {
    button.disabled = role !== 'operator';
    if (role !== 'operator') button.title = 'this token may only read';
  }
  const showInfo = () => (draftInfo.textContent = `draft revision ${draftRevision}`);
  showInfo();
  let seq = 0;
  async function validate(): Promise<void> {
    const mine = ++seq;
    let template: unknown;
    try {
      template = JSON.parse(editor.value);
    } catch (err) {
      validation.replaceChildren(el('li', { 'data-pointer': '', 'data-code': 'json.syntax' }, `not JSON: ${(err as Error).message}`));
      validation.dataset.state = 'invalid';
      return;
    }
    const { body } = await api<Report>('v1/console/validate', { method: 'POST', body: { template } });
    if (mine !== seq) return; // a later edit's answer wins
    validation.replaceChildren(...(body.ok ? [el('li', { class: 'ok' }, `valid · ${body.semanticHash ?? ''}`)] : body.errors.map((e) => el('li', { 'data-pointer': e.pointer, 'data-code': e.code }, el('code', {}, e.pointer || '/'), ` ${e.code}: ${e.message}`))));
    validation.dataset.state = body.ok ? 'valid' : 'invalid';
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  editor.addEventListener('input', () => {
    validation.dataset.state = 'checking';
    clearTimeout(timer);
    timer = setTimeout(() => void validate().catch((err) => setStatus((err as Error).message, 'error')), 250);
  });
  async function act(path: string, payload: Record<string, unknown>, done: (answer: { outcome: { draftRevision?: number; revision?: number } }) => string) {
    try {
      const { body } = await api<{ outcome: { draftRevision?: number; revision?: number } }>(path, { method: 'POST', body: payload });
      actionResult.dataset.kind = 'ok';
      actionResult.textContent = done(body);
    } catch (err) {
      actionResult.dataset.kind = 'error';
      actionResult.textContent = err instanceof ApiError ? `${err.code}: ${err.message}` : (err as Error).message;
    }
  }
  save.addEventListener('click', () => {
    let template: unknown;
    try {
      template = JSON.parse(editor.value);
    } catch (err) {
      actionResult.dataset.kind = 'error';
      actionResult.textContent = `not JSON: ${(err as Error).message}`;
      return;
    }
    void act(`v1/console/catalog/${encodeURIComponent(id)}/draft`, { template, expectedDraftRevision: draftRevision }, (answer) => {
      draftRevision = answer.outcome.draftRevision ?? draftRevision;
      showInfo();
      return `saved as draft revision ${draftRevision}`;
    });
  });
  publish.addEventListener('click', () => void act(`v1/console/catalog/${encodeURIComponent(id)}/publish`, { expectedDraftRevision: draftRevision }, (answer) => `published ${id}@${answer.outcome.revision}`));

  // A form edit changes the editor's text, then validates it as typing does.
  const form = await nodeForm(editor, () => editor.dispatchEvent(new Event('input')));
  // The graph of the draft, where edges are drawn and removed (the same text edits).
  const graph = edgeGraph(editor, () => editor.dispatchEvent(new Event('input')));
  root.replaceChildren(
    el('section', { class: 'card' }, el('h2', {}, `Workflow ${id}`), el('table', { id: 'revisions' }, el('thead', {}, el('tr', {}, ...['Revision', 'Semantic hash', 'From', 'Published', 'By'].map((h) => el('th', {}, h)))), el('tbody', {}, ...revisionRows))),
    el('section', { class: 'card' }, el('h2', {}, 'Semantic diff'), el('div', { class: 'row' }, a, b, compare), diffOut),
    el('section', { class: 'card' }, el('h2', {}, 'Draft'), el('div', { class: 'row' }, save, publish, draftInfo), graph, editor, form, validation, actionResult),
  );
  setStatus(`${entry.revisions.length} revisions${entry.draft ? ` · draft revision ${entry.draft.draftRevision}` : ''}`, 'ok');
  if (editor.value) await validate();
}

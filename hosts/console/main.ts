// The console's entry: reads the token, asks the server what it may do (`/v1/console/session`),
// then shows the view named by `?view=` (runs, inbox, triggers, catalog).
import { ApiError, api, setStatus, setToken, takeToken } from './api.js';
import { showInbox } from './inbox-view.js';
import { showRuns } from './runs-view.js';
import { showTriggers } from './triggers-view.js';
import { showCatalog } from './catalog-view.js';

async function start(): Promise<void> {
  takeToken();
  const view = new URLSearchParams(location.search).get('view') ?? 'runs';
  document.getElementById(`nav-${view}`)?.setAttribute('aria-current', 'page');
  let role: string;
  let principal: string;
  try {
    ({ role, principal } = (await api<{ role: string; principal: string }>('v1/console/session')).body);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return askToken();
    throw err;
  }
  document.getElementById('role')!.textContent = role === 'operator' ? `operator: ${principal}` : 'read-only token';
  document.body.dataset.role = role;
  const root = document.getElementById('view')!;
  void api<{ items: unknown[] }>('v1/console/inbox').then(({ body }) => {
    document.getElementById('inbox-count')!.textContent = body.items.length ? String(body.items.length) : '';
  });
  const views: Record<string, (root: HTMLElement, role: string, principal: string) => Promise<void>> = { inbox: showInbox, triggers: showTriggers, catalog: showCatalog };
  if (views[view]) {
    await views[view](root, role, principal);
    document.body.dataset.ready = 'idle';
  } else showRuns(root);
}

function askToken(): void {
  const form = document.getElementById('token-form') as HTMLFormElement;
  form.hidden = false;
  setStatus('a bearer token is required', 'error');
  document.body.dataset.ready = 'token';
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setToken((document.getElementById('token-input') as HTMLInputElement).value.trim());
    location.reload();
  });
}

start().catch((err) => {
  setStatus((err as Error).message, 'error');
  document.body.dataset.ready = 'error';
});

// The console's calls to the HTTP API of `serve --http`, same-origin (the console is served by
// that API under /console/). The bearer token comes from the URL fragment `#token=…` once (never
// sent to a server in a URL) and is kept in this tab's session storage.

const tokenKey = 'agent-workflow.console.token';

export function takeToken(): string | undefined {
  const fromFragment = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromFragment) {
    sessionStorage.setItem(tokenKey, fromFragment);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem(tokenKey) ?? undefined;
}

export function setToken(token: string): void {
  sessionStorage.setItem(tokenKey, token);
}

export function token(): string | undefined {
  return sessionStorage.getItem(tokenKey) ?? undefined;
}

export function authHeaders(): Record<string, string> {
  const t = token();
  return t ? { authorization: `Bearer ${t}` } : {};
}

/** An error the API answered: its status and `{ error: { code, message } }`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: T }> {
  const response = await fetch(`../${path}`, {
    method: init.method ?? 'GET',
    headers: { ...authHeaders(), ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    cache: 'no-store',
  });
  const body = (await response.json()) as T & { error?: { code: string; message: string } };
  if (!response.ok) throw new ApiError(response.status, body.error?.code ?? 'http.error', body.error?.message ?? `HTTP ${response.status}`);
  return { status: response.status, body };
}

/** The run page: the replay page following the run live (SSE), journal on business events, token in the fragment. */
export function runPageUrl(runId: string): string {
  const t = token();
  return `../page/?run=${encodeURIComponent(runId)}&events=business${t ? `#token=${encodeURIComponent(t)}` : ''}`;
}

/** Downloads a run's export (a link cannot carry the bearer token, so it is fetched, then saved). */
export async function downloadExport(runId: string): Promise<void> {
  const response = await fetch(`../v1/runs/${encodeURIComponent(runId)}/export`, { headers: authHeaders(), cache: 'no-store' });
  if (!response.ok) throw new ApiError(response.status, 'http.error', `export failed: HTTP ${response.status}`);
  const url = URL.createObjectURL(await response.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = `${runId}.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** `el('tag', { attr: value }, children…)`: the console's only way of making DOM, text never parsed as HTML. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string | undefined> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

export function setStatus(text: string, kind: 'ok' | 'error' | 'info' = 'info'): void {
  const s = document.getElementById('status')!;
  s.textContent = text;
  s.dataset.kind = kind;
}

export function time(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

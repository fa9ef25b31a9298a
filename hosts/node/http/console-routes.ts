// The console's JSON routes under /v1/console/ (docs/console.md). Reads are open to both tokens;
// the actions (approve, reject, resolve) need the operator token, and the server refuses them to a
// read-only one with 403 `http.forbidden` before reading the body. An action is recorded as the
// token's principal (a named operator token's name, or `operator`); a `by` in the body is refused.
//
//   GET  /v1/console/session                 { role, principal }: what this token may do, as whom
//   GET  /v1/console/runs?status=&from=&to=&template=&origin=&wait=&q=&cursor=&limit=
//                                            a page of runs, newest first, and `nextCursor` when
//                                            there are more (the cursor is the last run's place);
//                                            `template` is <id> or <id>@<revision>, `origin` is
//                                            trigger, direct or binding:<id>[@<revision>], `wait` is
//                                            approval or needs_attention, `q` a run id prefix or
//                                            the source event id that launched the run
//   GET  /v1/console/counts                  { counts: { <status>: n } }: runs by status
//   GET  /v1/console/inbox                   runs waiting for a person: approvals and
//                                            needs_attention nodes, each with its CLI command
//   GET  /v1/console/bindings|ingress|deliveries, POST /v1/console/deliveries/:id/retry
//                                            triggers and deliveries (console-triggers.ts)
//   GET  /v1/console/node-types              { nodeTypes: [{ uses, label, configSchema, ports?, … }] }:
//                                            the engine's node kinds and the host's definitions,
//                                            for the draft editor's node forms
//   /v1/console/catalog…, POST /v1/console/validate
//                                            the catalog and the draft editor (console-catalog.ts)
//   POST /v1/console/runs/:id/approve        { nodeId, approved, comment? }
//   POST /v1/console/runs/:id/resolve        { nodeId, item?, resolution: succeeded|retry|fail,
//                                              output?, reason?, attentionSeq? }
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { WorkflowRuntime } from '../runtime.js';
import type { RunListFilter, RunRecord } from '../../core/store.js';
import { httpLimits } from '../limits.js';
import type { Access } from './access.js';
import { HttpError, intParam } from './http-error.js';
import { approveCommand, inboxItems, resolveCommand, shellWord, type Resolution } from './console-inbox.js';
import { listBindings, listDeliveries, listIngress, retryDelivery } from './console-triggers.js';
import { catalogDiff, catalogEntry, catalogList, draftTemplate, expectedRevision } from './console-catalog.js';

/** What the console's routes use of the runtime: its operator verbs, catalog, bindings, ingress journal and deliveries. */
export type ConsoleHost = Pick<WorkflowRuntime, 'listRuns' | 'countRuns' | 'getRun' | 'readEvents' | 'approve' | 'resolve' | 'validate' | 'catalog' | 'bindings' | 'triggerStorage' | 'deliveries' | 'nodeTypes'>;

/** dist/console, next to this file's dist/hosts/node/http. */
export const defaultConsoleDir = fileURLToPath(new URL('../../../console/', import.meta.url));

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

/** A run as a list row: what the table shows, without the run's payloads. */
export function runRow(r: RunRecord) {
  const o = r.outcome;
  return {
    runId: r.runId,
    status: r.status,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    lastSeq: r.lastSeq,
    ...(o?.pausedReason ? { pausedReason: o.pausedReason } : {}),
    ...(r.waitReason ? { waitReason: r.waitReason } : {}),
    ...(o?.error ? { error: { code: o.error.code, message: o.error.message } } : {}),
    waiting: { approvals: o?.approvals?.length ?? 0, attention: o?.attention?.length ?? 0 },
  };
}

/** `<createdAt>:<runId>` of a page's last run. */
function parseCursor(cursor: string): RunListFilter['before'] {
  const m = /^(0|[1-9][0-9]{0,15}):(.+)$/s.exec(cursor);
  if (!m) throw new HttpError(400, 'http.bad-request', 'cursor is not one this API gave');
  return { createdAt: Number(m[1]), runId: m[2] };
}

/** A time bound: milliseconds since the epoch, or an ISO 8601 date-time. */
function timeParam(value: string | null, name: string): number | undefined {
  if (value === null || value === '') return undefined;
  if (/^[0-9]{1,16}$/.test(value)) return Number(value);
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new HttpError(400, 'http.bad-request', `${name} must be milliseconds since the epoch or an ISO 8601 date-time`);
  return t;
}

/** `trigger`, `direct`, or a binding: `binding:<id>` or `binding:<id>@<revision>`. */
function originParam(value: string | undefined): RunListFilter['origin'] {
  if (!value) return undefined;
  if (value === 'trigger' || value === 'direct') return value;
  const m = /^binding:([^@]+)(?:@([1-9][0-9]{0,8}))?$/.exec(value);
  if (!m) throw new HttpError(400, 'http.bad-request', 'origin is trigger, direct, binding:<id> or binding:<id>@<revision>');
  return { bindingId: m[1], ...(m[2] !== undefined ? { bindingRevision: Number(m[2]) } : {}) };
}

async function listPage(rt: ConsoleHost, url: URL) {
  const q = url.searchParams;
  const limit = intParam(q.get('limit'), 'limit', httpLimits.consolePageDefault, httpLimits.consolePageMax) || httpLimits.consolePageDefault;
  const status = q.get('status');
  const cursor = q.get('cursor');
  const from = timeParam(q.get('from'), 'from');
  const to = timeParam(q.get('to'), 'to');
  const search = q.get('q')?.trim();
  const template = q.get('template')?.trim();
  const origin = originParam(q.get('origin')?.trim());
  const wait = q.get('wait');
  if (wait && wait !== 'approval' && wait !== 'needs_attention') throw new HttpError(400, 'http.bad-request', 'wait is approval or needs_attention');
  const filter: RunListFilter = {
    ...(status ? { statuses: status.split(',') } : {}),
    ...(cursor ? { before: parseCursor(cursor) } : {}),
    ...(from !== undefined ? { createdFrom: from } : {}),
    ...(to !== undefined ? { createdTo: to } : {}),
    ...(search ? { search } : {}),
    ...(template ? { template } : {}),
    ...(origin ? { origin } : {}),
    ...(wait ? { pausedReason: wait as 'approval' | 'needs_attention' } : {}),
    // One more than the page tells whether there is a next page without counting.
    limit: limit + 1,
  };
  const found = await rt.listRuns(filter);
  const page = found.slice(0, limit);
  const last = page.at(-1);
  return { runs: page.map(runRow), ...(found.length > limit && last ? { nextCursor: `${last.createdAt}:${last.runId}` } : {}) };
}

async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > httpLimits.actionBodyBytesMax) throw new HttpError(413, 'http.body-too-large', `the body is larger than ${httpLimits.actionBodyBytesMax} bytes`);
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'http.bad-request', 'the body must be a JSON object');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'http.bad-request', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

function stringField(body: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const v = body[name];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || v === '') throw new HttpError(400, 'http.bad-request', `${name} must be a non-empty string`);
  return v;
}

/** An action's outcome: applied (200), or committed but not applied yet (202); refusals are 409. */
async function act(res: ServerResponse, cli: string, action: () => Promise<unknown>): Promise<void> {
  try {
    return send(res, 200, { applied: true, outcome: await action(), cli });
  } catch (err) {
    const e = err as { code?: unknown; message?: string; commandId?: number };
    if (e.code === 'command.pending') return send(res, 202, { applied: false, message: e.message, cli });
    if (typeof e.code === 'string' && !e.code.endsWith('not-found') && e.code !== 'http.internal') throw new HttpError(409, e.code, e.message ?? e.code);
    throw err;
  }
}

/** Who an action is recorded as: the token's principal. A `by` in the request is refused, never believed. */
function actorOf(body: Record<string, unknown>, access: Access): string {
  if (body.by !== undefined) throw new HttpError(400, 'http.identity-argument', `by is not accepted: actions are recorded as the token's principal (${access.principal})`);
  return access.principal;
}

export async function consoleRoute(rt: ConsoleHost, req: IncomingMessage, res: ServerResponse, parts: string[], url: URL, access: Access): Promise<void> {
  const { role } = access;
  const isRead = req.method === 'GET' || req.method === 'HEAD';
  if (isRead && parts.length === 1 && parts[0] === 'session') return send(res, 200, { role, principal: access.principal });
  if (isRead && parts.length === 1 && parts[0] === 'runs') return send(res, 200, await listPage(rt, url));
  if (isRead && parts.length === 1 && parts[0] === 'counts') return send(res, 200, { counts: await rt.countRuns() });
  if (isRead && parts.length === 1 && parts[0] === 'inbox') return send(res, 200, { items: await inboxItems(rt, httpLimits.inboxRunsMax) });
  if (isRead && parts.length === 1 && parts[0] === 'bindings') return send(res, 200, await listBindings(rt));
  if (isRead && parts.length === 1 && parts[0] === 'ingress') return send(res, 200, await listIngress(rt, url));
  if (isRead && parts.length === 1 && parts[0] === 'deliveries') return send(res, 200, await listDeliveries(rt, url));
  if (isRead && parts.length === 1 && parts[0] === 'node-types') return send(res, 200, { nodeTypes: rt.nodeTypes() });
  if (isRead && parts.length === 1 && parts[0] === 'catalog') return send(res, 200, await catalogList(rt, url));
  if (isRead && parts.length === 2 && parts[0] === 'catalog') return send(res, 200, await catalogEntry(rt, segment(parts[1], 'workflow id')));
  if (isRead && parts.length === 3 && parts[0] === 'catalog' && parts[2] === 'diff') return send(res, 200, await catalogDiff(rt, segment(parts[1], 'workflow id'), url));
  // Validation changes nothing: either token may ask.
  if (req.method === 'POST' && parts.length === 1 && parts[0] === 'validate') return send(res, 200, await rt.validate((await readJsonBody(req)).template));
  if (parts.length === 3 && parts[0] === 'catalog' && (parts[2] === 'draft' || parts[2] === 'publish')) {
    if (req.method !== 'POST') throw new HttpError(405, 'http.method-not-allowed', `${req.method} is not allowed: ${parts[2]} takes POST`);
    if (role !== 'operator') throw new HttpError(403, 'http.forbidden', `a read-only token cannot ${parts[2] === 'draft' ? 'save a draft' : 'publish'}: it needs the operator token`);
    const id = segment(parts[1], 'workflow id');
    const body = await readJsonBody(req);
    const expected = expectedRevision(body);
    const by = actorOf(body, access);
    if (parts[2] === 'draft') {
      const template = draftTemplate(id, body);
      return act(res, `agent-workflow draft put <file> --expected ${expected}`, () => rt.catalog.putDraft(template, { expectedDraftRevision: expected, by }));
    }
    return act(res, `agent-workflow publish ${shellWord(id)} --expected ${expected}`, () => rt.catalog.publish(id, { expectedDraftRevision: expected, by }));
  }
  if (parts.length === 3 && parts[0] === 'deliveries' && parts[2] === 'retry') {
    if (req.method !== 'POST') throw new HttpError(405, 'http.method-not-allowed', `${req.method} is not allowed: retry takes POST`);
    if (role !== 'operator') throw new HttpError(403, 'http.forbidden', 'a read-only token cannot retry a delivery: it needs the operator token');
    let id: string;
    try {
      id = decodeURIComponent(parts[1]);
    } catch {
      throw new HttpError(400, 'http.bad-request', 'the delivery id is not valid percent-encoding');
    }
    return act(res, `agent-workflow deliveries retry ${shellWord(id)}`, () => retryDelivery(rt, id));
  }
  if (parts.length === 3 && parts[0] === 'runs' && (parts[2] === 'approve' || parts[2] === 'resolve')) {
    if (req.method !== 'POST') throw new HttpError(405, 'http.method-not-allowed', `${req.method} is not allowed: ${parts[2]} takes POST`);
    if (role !== 'operator') throw new HttpError(403, 'http.forbidden', `a read-only token cannot ${parts[2]}: it needs the operator token`);
    let runId: string;
    try {
      runId = decodeURIComponent(parts[1]);
    } catch {
      throw new HttpError(400, 'http.bad-request', 'the run id is not valid percent-encoding');
    }
    const body = await readJsonBody(req);
    const nodeId = stringField(body, 'nodeId', true)!;
    const by = actorOf(body, access);
    const wait = { timeoutMs: httpLimits.actionWaitMs };
    if (parts[2] === 'approve') {
      if (typeof body.approved !== 'boolean') throw new HttpError(400, 'http.bad-request', 'approved must be true or false');
      const approved = body.approved;
      const comment = stringField(body, 'comment', false);
      return act(res, approveCommand(runId, nodeId, approved, by, comment), () => rt.approve(runId, nodeId, { by, approved, ...(comment !== undefined ? { comment } : {}), ...wait }));
    }
    const item = body.item;
    if (item !== undefined && (typeof item !== 'number' || !Number.isInteger(item) || item < 0)) throw new HttpError(400, 'http.bad-request', 'item must be a non-negative integer');
    // The unknown the operator looked at: refused (`resolve.stale`) when the run has another now.
    const attentionSeq = body.attentionSeq;
    if (attentionSeq !== undefined && (typeof attentionSeq !== 'number' || !Number.isSafeInteger(attentionSeq) || attentionSeq < 1)) throw new HttpError(400, 'http.bad-request', 'attentionSeq must be a positive integer');
    const resolution = parseResolution(body);
    const fields = resolution.kind === 'succeeded' ? { succeeded: resolution.output } : resolution.kind === 'retry' ? { retry: true } : { fail: resolution.reason };
    const named = attentionSeq !== undefined ? { attentionSeq: attentionSeq as number } : {};
    return act(res, resolveCommand(runId, nodeId, resolution, by, item as number | undefined, attentionSeq as number | undefined), () => rt.resolve(runId, nodeId, { ...fields, by, ...(item !== undefined ? { item: item as number } : {}), ...named }));
  }
  throw new HttpError(404, 'http.not-found', `no route ${url.pathname}`);
}

function segment(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new HttpError(400, 'http.bad-request', `the ${what} is not valid percent-encoding`);
  }
}

function parseResolution(body: Record<string, unknown>): Resolution {
  switch (body.resolution) {
    case 'succeeded':
      if (!('output' in body)) throw new HttpError(400, 'http.bad-request', 'a succeeded resolution needs output (the output the node produced)');
      return { kind: 'succeeded', output: body.output };
    case 'retry':
      return { kind: 'retry' };
    case 'fail':
      return { kind: 'fail', reason: stringField(body, 'reason', true)! };
    default:
      throw new HttpError(400, 'http.bad-request', 'resolution must be succeeded, retry or fail');
  }
}

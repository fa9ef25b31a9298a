/**
 * The HTTP API of `agent-workflow serve --http <port>`: runs and their journals as JSON, and a
 * run's events as Server-Sent Events while it runs. Read-only apart from the console's operator actions; every request carries the bearer
 * token (the same model as the script service: a token file or an environment variable, and no
 * token only with `insecureNoAuth` on a loopback host).
 *
 *   GET /v1/runs?status=<s>[,<s>…]&limit=N   runs, newest first
 *   GET /v1/runs/:id                          the run's view
 *   GET /v1/runs/:id/export                   the run's self-contained export (as `agent-workflow export`)
 *   GET /v1/runs/:id/events?afterSeq=&limit=  a page of its events, ascending seq
 *   GET /v1/runs/:id/events                   with `Accept: text/event-stream`: the live stream;
 *                                             `id:` is the seq, `event:` the event type; resumes
 *                                             after `Last-Event-ID` (or `afterSeq`); ends after
 *                                             the run's terminal commit; live-only progress
 *                                             of calls comes as `event: progress`, without id
 *
 *   /v1/console/…                             the console's routes (hosts/node/http/console-routes.ts);
 *                                             actions need the operator token, a read-only
 *                                             token gets 403 `http.forbidden`
 *   GET /console/…                            the console (static files, no token; docs/console.md)
 *   GET /v1/capabilities?scopes=<s>[,<s>…]   the tools, agents and models an authority with these
 *                                             scopes may use here (`runtime.capabilities`)
 *
 *   GET /page/…                               the browser replay page (static files, no token:
 *                                             they hold no run data); `/page/?run=<id>` follows a
 *                                             run live through this API (docs/browser.md)
 *
 * Errors are JSON `{ error: { code, message } }`: 400 `http.bad-request`, 401
 * `http.unauthorized`, 403 `http.forbidden`, 404 `run.not-found` / `http.not-found`, 405 `http.method-not-allowed`.
 *
 * Trigger routes (no bearer token: each request is signed with its binding's secret; see
 * docs/triggers.md):
 *
 *   POST /v1/hooks/:bindingId      a webhook event (webhook.ts): 202 { runId, deduplicated }
 *   POST /v1/dingtalk/:bindingId   a DingTalk robot callback (dingtalk.ts): a DingTalk text reply
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLoopback, readTokenFile } from '../../../sandbox/service/auth.js';
import { handleDingtalk } from '../triggers/dingtalk.js';
import { TriggerPipeline } from '../triggers/ingress.js';
import { httpLimits, triggerLimits } from '../limits.js';
import { handleWebhook } from '../triggers/webhook.js';
import { defaultPageDir, readPageFile } from '../../shared/page-files.js';
import { defaultConsoleDir, type ConsoleHost } from '../http/console-routes.js';
import type { Operator } from '../../core/operator-api.js';
import type { TriggerHost } from '../triggers/trigger-host.js';
import type { LiveItem, LiveOptions } from './live.js';
import type { Authority } from '../../core/types.js';
import type { ListedCapability } from '../sdk/gateway.js';

/** What the API reads: the operator's read verbs, a run's live stream, and what the trigger routes take. */
export type HttpApiHost = Pick<Operator, 'listRuns' | 'getRun' | 'exportRun' | 'readEvents'> & TriggerHost & { live(runId: string, options?: LiveOptions): AsyncGenerator<LiveItem, void, undefined>; capabilities(authority: Authority): ListedCapability[] };
import { CodedError } from '../../../engine/protocol/coded-error.js';
import { HttpError, intParam } from '../http/http-error.js';
import { accessOf, hasTokens, readOperatorsFile } from '../http/access.js';
import { consoleRoute } from '../http/console-routes.js';

/** Environment variable read when no token file is given. */
export const httpTokenEnvVar = 'AGENT_WORKFLOW_HTTP_TOKEN';

export interface HttpApiOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** 0 picks a free port. */
  port: number;
  /** The operator's bearer token: it may read and act (`--http-token-file`). */
  token?: string;
  /** A bearer token that may only read (`--http-readonly-token-file`; docs/console.md). */
  readonlyToken?: string;
  /** Named operator tokens (`--http-operators-file`): each may act, recorded as its name. */
  operators?: Readonly<Record<string, string>>;
  /** The built console served under `/console/` (default dist/console). */
  consoleDir?: string;
  /** What the console's routes (`/v1/console/…`) read and act on; without it they answer 404. */
  console?: ConsoleHost;
  /** Serve without a token: refused unless the host is a loopback address. */
  insecureNoAuth?: boolean;
  /** Comment lines on an idle event stream (default 15 s). */
  heartbeatMs?: number;
  /** The built replay page served under `/page/` (default dist/browser). */
  pageDir?: string;
  log?: (level: string, message: string) => void;
  /** The trigger pipeline of the hook routes (default: one with the default deployment). */
  triggers?: TriggerPipeline;
  /**
   * The MCP gateway on `POST /v1/mcp` (Streamable HTTP; `--http-mcp`): its profiles and policy.
   * Operator tokens only; each request acts as its token's principal. Absent: 404.
   */
  mcp?: import('../mcp/http.js').HttpMcpOptions & { runtime: import('../runtime.js').WorkflowRuntime };
}

export interface HttpApi {
  /** `http://host:port`, with the port the server got. */
  url: string;
  close(): Promise<void>;
}

export class HttpApiConfigError extends CodedError {
  declare readonly code: 'http.no-token' | 'http.insecure-non-loopback' | 'http.bad-token-file' | 'http.token-file-not-found';

  constructor(code: HttpApiConfigError['code'], message: string) {
    super(code, message);
    this.name = 'HttpApiConfigError';
  }
}

/** Reads a token file or an operators file; a missing, unreadable, empty or oversized one is a wrong configuration, said as one. */
function readCredentialFile<T>(file: string, what: string, read: (file: string) => T): T {
  try {
    return read(file);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') throw new HttpApiConfigError('http.token-file-not-found', `${what} ${file} does not exist`);
    throw new HttpApiConfigError('http.bad-token-file', `${what} ${file}: ${e.code ? `${e.code}: ` : ''}${e.message}`);
  }
}

/** The token of `--http-token-file`, else of the environment; `undefined` when neither has one. */
export function httpToken(tokenFile: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (tokenFile !== undefined) return readCredentialFile(tokenFile, 'token file', readTokenFile);
  const fromEnv = env[httpTokenEnvVar]?.trim();
  return fromEnv ? fromEnv : undefined;
}

/** The named operator tokens of `--http-operators-file`, with the same typed errors as a token file. */
export function httpOperators(file: string | undefined): Record<string, string> | undefined {
  return file === undefined ? undefined : readCredentialFile(file, 'operators file', readOperatorsFile);
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (status === 401) res.setHeader('www-authenticate', 'Bearer');
  sendJson(res, status, { error: { code, message } });
}

function wantsEventStream(req: IncomingMessage): boolean {
  return (req.headers.accept ?? '').split(',').some((part) => part.trim().split(';')[0] === 'text/event-stream');
}

/** Errors of the runtime with a stable code, mapped to a status. */
function asHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  const e = err as { code?: unknown; message?: string };
  const code = typeof e.code === 'string' ? e.code : 'http.internal';
  if (code.endsWith('not-found')) return new HttpError(404, code, e.message ?? code);
  if (code === 'live.bad-option' || code.endsWith('.bad-id')) return new HttpError(400, 'http.bad-request', e.message ?? code);
  return new HttpError(500, code, e.message ?? String(err));
}

export async function startHttpApi(rt: HttpApiHost, options: HttpApiOptions): Promise<HttpApi> {
  const host = options.host ?? '127.0.0.1';
  const tokens = {
    ...(options.token !== undefined ? { operator: options.token } : {}),
    ...(options.readonlyToken !== undefined ? { readonly: options.readonlyToken } : {}),
    ...(options.operators !== undefined ? { operators: options.operators } : {}),
  };
  if (!hasTokens(tokens)) {
    if (!options.insecureNoAuth) throw new HttpApiConfigError('http.no-token', `no bearer token for the HTTP API: give --http-token-file or set ${httpTokenEnvVar} (or --insecure-no-auth on a loopback host)`);
    if (!isLoopback(host)) throw new HttpApiConfigError('http.insecure-non-loopback', `the HTTP API serves without a token only on a loopback host, not ${host}`);
  }
  const heartbeatMs = options.heartbeatMs ?? httpLimits.heartbeatMs;
  const log = options.log ?? (() => undefined);
  /** Open event streams, ended when the server closes. */
  const streams = new Set<AbortController>();

  const triggers = options.triggers ?? new TriggerPipeline(rt, { log });

  /** The body, or undefined once a 413 was answered (and recorded) because it was too large. */
  async function readBody(req: IncomingMessage, source: 'webhook' | 'dingtalk', bindingId: string): Promise<Buffer | undefined> {
    const max = triggerLimits.bodyBytesMax;
    const declared = Number(req.headers['content-length'] ?? 0);
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = declared > max;
    if (!tooLarge) {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > max) {
          tooLarge = true;
          break;
        }
        chunks.push(chunk);
      }
    }
    if (!tooLarge) return Buffer.concat(chunks);
    await triggers.reject(source, bindingId, { code: `${source}.body-too-large`, message: `the body is larger than ${max} bytes` });
    return undefined;
  }

  async function triggerRoute(req: IncomingMessage, res: ServerResponse, parts: string[]): Promise<void> {
    const source = parts[1] === 'hooks' ? 'webhook' : 'dingtalk';
    // Refused before any body is read, and recorded like every trigger refusal (to a bound: no caller).
    const refuse = async (bindingId: string, e: HttpError): Promise<never> => {
      await triggers.reject(source, bindingId, { code: e.code, message: e.message });
      throw e;
    };
    let bindingId: string;
    try {
      bindingId = decodeURIComponent(parts[2]);
    } catch {
      return refuse(parts[2], new HttpError(400, 'http.bad-request', 'the binding id is not valid percent-encoding'));
    }
    if (req.method !== 'POST') return refuse(bindingId, new HttpError(405, 'http.method-not-allowed', `${req.method} is not allowed: trigger routes take POST`));
    const raw = await readBody(req, source, bindingId);
    if (raw === undefined) {
      res.setHeader('connection', 'close');
      return sendJson(res, 413, { error: { code: `${source}.body-too-large`, message: `the body is larger than ${triggerLimits.bodyBytesMax} bytes` } });
    }
    const answer = source === 'webhook' ? await handleWebhook(rt, triggers, bindingId, req.headers, raw) : await handleDingtalk(rt, triggers, bindingId, req.headers, raw);
    if (answer.status >= 500) log('warn', `${req.method} ${req.url}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return sendJson(res, answer.status, answer.body);
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pagePath = /^\/page(\/.*)?$/.exec(new URL(req.url ?? '/', 'http://localhost').pathname);
    if (pagePath && (req.method === 'GET' || req.method === 'HEAD')) return sendPage(res, pagePath[1]);
    const consolePath = /^\/console(\/.*)?$/.exec(new URL(req.url ?? '/', 'http://localhost').pathname);
    if (consolePath && (req.method === 'GET' || req.method === 'HEAD')) return sendPage(res, consolePath[1], options.consoleDir ?? defaultConsoleDir, '/console/');
    const path = new URL(req.url ?? '/', 'http://localhost').pathname.split('/').filter((p) => p !== '');
    if (path[0] === 'v1' && (path[1] === 'hooks' || path[1] === 'dingtalk') && path.length === 3) return triggerRoute(req, res, path);
    const access = accessOf(req.headers.authorization, tokens);
    if (access === undefined) throw new HttpError(401, 'http.unauthorized', 'a valid bearer token is required');
    const url = new URL(req.url ?? '/', 'http://localhost');
    const parts = url.pathname.split('/').filter((p) => p !== '');
    if (parts[0] === 'v1' && parts[1] === 'mcp' && parts.length === 2) {
      if (!options.mcp) throw new HttpError(404, 'http.not-found', 'this server has no MCP gateway (serve --http-mcp <profiles>)');
      // A read-only token may not run, approve or publish anything: the gateway is an operator's.
      if (access.role !== 'operator') throw new HttpError(403, 'http.forbidden', 'a read-only token cannot use the MCP gateway: it needs an operator token');
      const { handleMcpRequest } = await import('../mcp/http.js');
      const { runtime, ...policy } = options.mcp;
      return handleMcpRequest(runtime, req, res, policy, access.principal);
    }
    if (parts[0] === 'v1' && parts[1] === 'console') {
      if (!options.console) throw new HttpError(404, 'http.not-found', 'this server has no console');
      return consoleRoute(options.console, req, res, parts.slice(2), url, access);
    }
    if (parts[0] === 'v1' && parts[1] === 'capabilities' && parts.length === 2) {
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'http.method-not-allowed', `${req.method} is not allowed: the API is read-only`);
      const scopes = (url.searchParams.get('scopes') ?? '').split(',').filter((s) => s !== '');
      const id = url.searchParams.get('authority') ?? 'http';
      return sendJson(res, 200, { authority: { id, scopes }, capabilities: rt.capabilities({ id, scopes }) });
    }
    if (parts[0] !== 'v1' || parts[1] !== 'runs' || parts.length > 4 || (parts.length === 4 && parts[3] !== 'events' && parts[3] !== 'export')) throw new HttpError(404, 'http.not-found', `no route ${url.pathname}`);
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'http.method-not-allowed', `${req.method} is not allowed: the API is read-only`);
    if (parts.length === 2) {
      const status = url.searchParams.get('status');
      const limit = intParam(url.searchParams.get('limit'), 'limit', httpLimits.runsListDefault, httpLimits.runsListMax);
      const runs = await rt.listRuns({ ...(status ? { statuses: status.split(',') } : {}), limit });
      return sendJson(res, 200, { runs });
    }
    let runId: string;
    try {
      runId = decodeURIComponent(parts[2]);
    } catch {
      throw new HttpError(400, 'http.bad-request', 'the run id is not valid percent-encoding');
    }
    if (parts.length === 3) return sendJson(res, 200, await rt.getRun(runId));
    if (parts[3] === 'export') return sendJson(res, 200, await rt.exportRun(runId));
    // A HEAD asks for the headers only: a stream's would never end.
    if (wantsEventStream(req) && req.method === 'HEAD') {
      await rt.getRun(runId);
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' });
      res.end();
      return;
    }
    if (wantsEventStream(req)) return streamEvents(req, res, runId, url);
    const afterSeq = intParam(url.searchParams.get('afterSeq'), 'afterSeq', 0);
    const limit = intParam(url.searchParams.get('limit'), 'limit', httpLimits.eventsPageDefault, httpLimits.eventsPageMax);
    const page = await rt.readEvents(runId, { afterSeq, limit });
    return sendJson(res, 200, { runId, ...page });
  }

  /** A file of the replay page; `/page` itself redirects to `/page/` so relative URLs resolve. */
  async function sendPage(res: ServerResponse, path: string | undefined, dir = options.pageDir ?? defaultPageDir, root = '/page/'): Promise<void> {
    if (path === undefined) {
      res.writeHead(308, { location: root });
      res.end();
      return;
    }
    let decoded: string;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      throw new HttpError(400, 'http.bad-request', 'the path is not valid percent-encoding');
    }
    const file = await readPageFile(dir, decoded);
    if (!file) throw new HttpError(404, 'http.not-found', `no page file ${path}`);
    res.writeHead(200, { 'content-type': file.type, 'content-length': file.body.length, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
    res.end(file.body);
  }

  async function streamEvents(req: IncomingMessage, res: ServerResponse, runId: string, url: URL): Promise<void> {
    const lastEventId = req.headers['last-event-id'];
    const afterSeq = intParam(typeof lastEventId === 'string' ? lastEventId.trim() : url.searchParams.get('afterSeq'), typeof lastEventId === 'string' ? 'Last-Event-ID' : 'afterSeq', 0);
    await rt.getRun(runId);
    const stop = new AbortController();
    streams.add(stop);
    const closed = () => stop.abort();
    res.on('close', closed);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    res.write(`: events of run ${runId} after seq ${afterSeq}\n\n`);
    const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), heartbeatMs);
    try {
      for await (const item of rt.live(runId, { afterSeq, signal: stop.signal })) {
        // A gap is this connection's own: the stream reads the journal and goes on, nothing is lost.
        if (item.kind === 'gap') continue;
        let message: string;
        if (item.kind === 'progress') {
          // Live only: no id, so that a resume after it starts after the last committed event.
          const data = JSON.stringify(item);
          if (data === undefined || Buffer.byteLength(data) > httpLimits.progressBytesMax) continue;
          message = `event: progress\ndata: ${data}\n\n`;
        } else message = `id: ${item.seq}\nevent: ${item.event.type}\ndata: ${JSON.stringify(item.event)}\n\n`;
        const ok = res.write(message);
        if (!ok && !stop.signal.aborted) await new Promise<void>((resume) => {
          const done = () => {
            res.off('drain', done);
            stop.signal.removeEventListener('abort', done);
            resume();
          };
          res.on('drain', done);
          stop.signal.addEventListener('abort', done, { once: true });
        });
      }
    } catch (err) {
      log('warn', `event stream of run ${runId}: ${(err as Error).message}`);
      res.write(`event: stream.error\ndata: ${JSON.stringify({ code: asHttpError(err).code, message: (err as Error).message })}\n\n`);
    } finally {
      clearInterval(heartbeat);
      res.off('close', closed);
      streams.delete(stop);
      res.end();
    }
  }

  // node:http (and net, streams) loads with the first server, not with the package.
  const { createServer } = await import('node:http');
  // Slow senders: the headers, and the whole request (a trigger's body), each within a bound;
  // the server answers 408 and closes the connection (checked every connectionsCheckingIntervalMs).
  const server: Server = createServer({ headersTimeout: httpLimits.headersTimeoutMs, requestTimeout: httpLimits.requestTimeoutMs, connectionsCheckingInterval: httpLimits.connectionsCheckingIntervalMs }, (req, res) => {
    route(req, res).catch((err) => {
      const e = asHttpError(err);
      if (e.status === 500) log('error', `${req.method} ${req.url}: ${e.message}`);
      sendError(res, e.status, e.code, e.message);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of streams) s.abort();
        server.close(() => resolve());
        // Keep-alive connections (an event stream's among them) would hold the close up.
        server.closeAllConnections();
      }),
  };
}

/**
 * The script evaluation service: node:http, no framework.
 *
 *   GET  /healthz       -> 200 {"ok":true}            (no authentication)
 *   GET  /v1/stats      -> 200 {"ok":true,"queued":N,...} (bearer token)
 *   POST /v1/evaluate   -> see protocol.ts            (bearer token)
 *
 * Bound to 127.0.0.1 unless told otherwise. Refuses to start without a token
 * unless `insecureNoAuth` is set and the host is a loopback address.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultScriptLimits, type ScriptLimits } from '../evaluator.js';
import * as L from '../limits.js';
import { bearerMatches, isLoopback, readTokenFile, tokenEnvVar } from './auth.js';
import { QueueFullError, WorkerPool, type WorkerPoolStats } from './pool.js';
import { formatFailure, formatOutcome, parseEvaluateRequest, type ServiceFailure } from './protocol.js';
import { CodedError } from '../../engine/protocol/coded-error.js';

export interface SandboxServiceOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** The bearer token; or `tokenFile`; or the AGENT_WORKFLOW_SANDBOX_TOKEN environment variable. */
  token?: string;
  tokenFile?: string;
  /** Environment to read the token from (default process.env). */
  env?: Record<string, string | undefined>;
  /** Serve without authentication; only allowed on a loopback host. */
  insecureNoAuth?: boolean;
  workers?: number;
  queueLength?: number;
  /** Limits for requests that leave them out (capped by `maxLimits`). */
  defaultLimits?: Partial<ScriptLimits>;
  /** Highest limits a request may ask for. */
  maxLimits?: Partial<ScriptLimits>;
  requestBodyBytesMax?: number;
  /**
   * Body bytes, times requestBodyCopies, that admitted requests may hold at
   * once (default: the main thread's margin under an RSS cap, else
   * requestBodyBytesHeldMaxDefault). A request that would pass it is refused
   * with 503 before its body is read; one that could never fit, with 413.
   */
  requestBodyBytesHeldMax?: number;
  /**
   * RSS cap of the service process. Split into a budget per worker that bounds
   * each worker's V8 heap and the linear memory of its QuickJS modules, and
   * the largest `memoryBytes` a request may ask for (see planMemoryBudget).
   */
  rssBytesMax?: number;
  /** The compiled worker module (default: worker.js next to pool.js). */
  workerUrl?: URL;
  /** Wall-clock backstop for one evaluation. */
  jobMsMax?: number;
}

export interface SandboxService {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string;
  /** Jobs waiting and running, workers ready and being replaced. */
  stats(): WorkerPoolStats;
  /** How the RSS cap was split (undefined without a cap). */
  memoryBudget: MemoryBudget | undefined;
  /** Stops accepting, finishes in-flight and queued requests, then stops the workers. */
  close(): Promise<void>;
}

export class ServiceConfigError extends CodedError {
  declare readonly code: 'service.no-token' | 'service.insecure-non-loopback' | 'service.invalid-option';

  constructor(code: ServiceConfigError['code'], message: string) {
    super(code, message);
  }
}

export async function startSandboxService(options: SandboxServiceOptions = {}): Promise<SandboxService> {
  const host = options.host ?? '127.0.0.1';
  const token = resolveToken(options);
  if (token === undefined) {
    if (!options.insecureNoAuth) {
      throw new ServiceConfigError('service.no-token', `no bearer token: give a token file or set ${tokenEnvVar} (or --insecure-no-auth on loopback)`);
    }
    if (!isLoopback(host)) throw new ServiceConfigError('service.insecure-non-loopback', 'insecureNoAuth is only allowed on a loopback host');
  }
  const maxima = mergeLimits(defaultScriptLimits, options.maxLimits);
  const defaults = capLimits(mergeLimits(defaultScriptLimits, options.defaultLimits), maxima);
  const bodyBytesMax = options.requestBodyBytesMax ?? L.requestBodyBytesMax;
  const workers = options.workers ?? L.serviceWorkersDefault;

  let budget: MemoryBudget | undefined;
  if (options.rssBytesMax !== undefined) {
    const planned = planMemoryBudget(options.rssBytesMax, workers, process.memoryUsage.rss(), defaults.memoryBytes);
    if (typeof planned === 'string') throw new ServiceConfigError('service.invalid-option', planned);
    // Requests asking for more QuickJS heap than a worker's modules can hold are
    // refused (service.limit-exceeded), never run with a lower limit.
    maxima.memoryBytes = Math.min(maxima.memoryBytes, planned.memoryBytesMax);
    budget = { ...planned, memoryBytesMax: maxima.memoryBytes };
  }

  const pool = new WorkerPool({
    workers,
    queueLength: options.queueLength ?? L.serviceQueueLengthDefault,
    workerUrl: options.workerUrl,
    jobMsMax: options.jobMsMax,
    ...(budget && {
      wasmMemoryBytesMax: budget.wasmMemoryBytesMax,
      workerOldGenerationMb: L.serviceWorkerOldGenerationMb,
      workerYoungGenerationMb: L.serviceWorkerYoungGenerationMb,
    }),
  });
  try {
    await pool.ready();
  } catch (e) {
    await pool.close();
    throw e;
  }

  const heldMax = options.requestBodyBytesHeldMax ?? (budget ? L.serviceMainRssMarginBytes : L.requestBodyBytesHeldMaxDefault);
  let held = 0;

  let closing = false;
  const server = createServer((req, res) => {
    void handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, formatFailure({ code: 'service.worker-failure', message: 'internal error' }));
      else res.destroy();
    });
  });
  server.requestTimeout = 60_000;
  server.headersTimeout = 15_000;
  // Longer than clients' usual idle reuse window, so the server rarely closes
  // a socket a client is about to reuse.
  server.keepAliveTimeout = 10_000;
  // "Expect: 100-continue": invite the body only from an authorised client.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (token === undefined || bearerMatches(req.headers.authorization, token)) res.writeContinue();
    server.emit('request', req, res);
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return fail(res, { status: 405, code: 'service.method-not-allowed', message: 'use GET' });
      return send(res, closing ? 503 : 200, closing ? formatFailure({ code: 'service.shutting-down', message: 'shutting down' }) : '{"ok":true}');
    }
    if (path !== '/v1/evaluate' && path !== '/v1/stats') return fail(res, { status: 404, code: 'service.not-found', message: 'not found' });
    const method = path === '/v1/stats' ? 'GET' : 'POST';
    if (req.method !== method) return fail(res, { status: 405, code: 'service.method-not-allowed', message: `use ${method}` });
    if (token !== undefined && !bearerMatches(req.headers.authorization, token)) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      return refuseUnread(req, res, { status: 401, code: 'service.unauthorized', message: 'missing or wrong bearer token' });
    }
    if (path === '/v1/stats') {
      return send(res, 200, JSON.stringify({ ok: true, ...pool.stats(), rssBytes: process.memoryUsage.rss(), memoryBudget: budget ?? null }));
    }
    if (closing) return refuseUnread(req, res, { status: 503, code: 'service.shutting-down', message: 'shutting down' });
    const type = req.headers['content-type'] ?? '';
    if (!/^application\/json\b/i.test(type)) {
      return refuseUnread(req, res, { status: 415, code: 'service.unsupported-media-type', message: 'send application/json' });
    }
    // Account the body against the main thread's budget before reading it
    // (a body without Content-Length is accounted at the largest size allowed).
    const declared = req.headers['content-length'] === undefined ? bodyBytesMax : Number(req.headers['content-length']);
    const tooLarge = { status: 413, code: 'service.body-too-large', message: `request body is larger than ${bodyBytesMax} bytes` } as const;
    if (!(declared <= bodyBytesMax)) return refuseUnread(req, res, tooLarge);
    const cost = Math.max(declared, 1) * L.requestBodyCopies;
    if (cost > heldMax) return refuseUnread(req, res, { ...tooLarge, message: `request body is larger than this service can hold (${Math.floor(heldMax / L.requestBodyCopies)} bytes)` });
    if (held + cost > heldMax) {
      res.setHeader('Retry-After', '1');
      return refuseUnread(req, res, { status: 503, code: 'service.overloaded', message: 'too many request bodies held; retry' });
    }
    held += cost;
    res.once('close', () => {
      held -= cost;
    });
    const body = await readBody(req, Math.min(bodyBytesMax, declared));
    if (body === undefined) {
      res.setHeader('Connection', 'close');
      return fail(res, tooLarge);
    }
    const job = parseEvaluateRequest(body, defaults, maxima);
    if ('status' in job) return fail(res, job);
    let pending;
    try {
      pending = pool.submit(job);
    } catch (e) {
      if (e instanceof QueueFullError) {
        res.setHeader('Retry-After', '1');
        return fail(res, { status: 429, code: 'service.queue-full', message: e.message });
      }
      throw e;
    }
    const outcome = await pending;
    const status = !outcome.ok && outcome.error.code === 'service.worker-failure' ? 503 : 200;
    send(res, status, formatOutcome(outcome));
  }

  let rssTimer: NodeJS.Timeout | undefined;
  if (options.rssBytesMax !== undefined) {
    const cap = options.rssBytesMax;
    let lastRecycle = 0;
    rssTimer = setInterval(() => {
      // Replacing workers costs a module load each; do it at most every few seconds.
      const now = performance.now();
      if (now - lastRecycle >= L.rssRecycleMsMin && process.memoryUsage.rss() > cap) {
        lastRecycle = now;
        pool.recycleAll();
      }
    }, L.rssCheckMs);
    rssTimer.unref();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  let closed: Promise<void> | undefined;
  return {
    url,
    stats: () => pool.stats(),
    memoryBudget: budget,
    close() {
      closed ??= (async () => {
        closing = true;
        if (rssTimer) clearInterval(rssTimer);
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await Promise.race([pool.drain(), new Promise((r) => setTimeout(r, L.shutdownGraceMsMax).unref())]);
        server.closeIdleConnections();
        await Promise.race([stopped, new Promise((r) => setTimeout(r, 1_000).unref())]);
        server.closeAllConnections();
        await pool.close();
      })();
      return closed;
    },
  };
}

/** How an RSS cap is split; every figure in bytes. */
export interface MemoryBudget {
  rssBytesMax: number;
  /** Main thread: its RSS at start plus serviceMainRssMarginBytes. */
  mainBytes: number;
  /** What each worker thread may hold. */
  workerBytes: number;
  /** Maximum linear memory of one QuickJS module in a worker. */
  wasmMemoryBytesMax: number;
  /** Largest `memoryBytes` a request may ask for (also bounded by the service's `maxLimits`). */
  memoryBytesMax: number;
}

/**
 * Splits `rssBytesMax` between the main thread and `workers` worker threads.
 * A worker holds, at most: its fixed part (which includes a module and a
 * spare at their initial size), its V8 heap (bounded by resourceLimits), one
 * module grown to the per-module wasm maximum, and one more fresh module (after
 * a heap failure the evaluator promotes its spare and loads the next) until
 * the pool terminates it. Returns an error message when the cap
 * leaves a module less than `serviceWasmMemoryBytesMin` or less than the
 * default `memoryBytes` plus headroom.
 */
export function planMemoryBudget(rssBytesMax: number, workers: number, mainRssBytes: number, defaultMemoryBytes: number): MemoryBudget | string {
  const mib = 1024 * 1024;
  const mainBytes = mainRssBytes + L.serviceMainRssMarginBytes;
  const workerOverhead =
    L.serviceWorkerFixedBytes + (L.serviceWorkerOldGenerationMb + L.serviceWorkerYoungGenerationMb) * mib + L.wasmMemoryBytesInitial;
  const workerBytes = Math.floor((rssBytesMax - mainBytes) / workers);
  const page = L.wasmPageBytes;
  const wasmMemoryBytesMax = Math.min(L.wasmMemoryBytesMax, Math.floor((workerBytes - workerOverhead) / page) * page);
  const wasmNeeded = Math.max(L.serviceWasmMemoryBytesMin, defaultMemoryBytes + L.serviceWasmHeadroomBytes);
  if (!(wasmMemoryBytesMax >= wasmNeeded)) {
    const capNeeded = Math.ceil((mainBytes + workers * (workerOverhead + wasmNeeded)) / mib);
    return `an RSS cap of ${Math.floor(rssBytesMax / mib)} MiB is too small for ${workers} worker(s) with a default memoryBytes of ${defaultMemoryBytes / mib} MiB: it needs at least ${capNeeded} MiB (the main process uses ${Math.ceil(mainRssBytes / mib)} MiB)`;
  }
  return {
    rssBytesMax,
    mainBytes,
    workerBytes,
    wasmMemoryBytesMax,
    memoryBytesMax: Math.min(L.memoryBytesMax, wasmMemoryBytesMax - L.serviceWasmHeadroomBytes),
  };
}

function resolveToken(options: SandboxServiceOptions): string | undefined {
  if (options.token !== undefined) {
    if (options.token.trim() === '') throw new ServiceConfigError('service.invalid-option', 'token is empty');
    return options.token;
  }
  if (options.tokenFile !== undefined) return readTokenFile(options.tokenFile);
  const fromEnv = (options.env ?? process.env)[tokenEnvVar];
  return fromEnv && fromEnv.trim() !== '' ? fromEnv.trim() : undefined;
}

function mergeLimits(base: ScriptLimits, over?: Partial<ScriptLimits>): ScriptLimits {
  const out = { ...base };
  for (const [k, v] of Object.entries(over ?? {})) {
    if (v === undefined) continue;
    if (!(k in out) || typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new ServiceConfigError('service.invalid-option', `bad limit '${k}'`);
    out[k as keyof ScriptLimits] = v;
  }
  return out;
}

function capLimits(limits: ScriptLimits, maxima: ScriptLimits): ScriptLimits {
  return {
    fuel: Math.min(limits.fuel, maxima.fuel),
    memoryBytes: Math.min(limits.memoryBytes, maxima.memoryBytes),
    stackBytes: Math.min(limits.stackBytes, maxima.stackBytes),
    outputBytes: Math.min(limits.outputBytes, maxima.outputBytes),
  };
}

/** Reads the body as UTF-8; undefined when it passes `bytesMax`. */
function readBody(req: IncomingMessage, bytesMax: number): Promise<string | undefined> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > bytesMax) {
    req.resume();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > bytesMax) {
        over = true;
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!over) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.setHeader('Cache-Control', 'no-store');
  res.end(body);
}

function fail(res: ServerResponse, failure: ServiceFailure): void {
  send(res, failure.status, formatFailure(failure));
}

/**
 * Answers without reading the request body, then closes the connection: the
 * socket is half-closed once the answer is written and destroyed shortly
 * after, so a body that keeps coming is never read in full (Node would
 * otherwise read and discard it to keep the connection alive).
 */
function refuseUnread(req: IncomingMessage, res: ServerResponse, failure: ServiceFailure): void {
  res.setHeader('Connection', 'close');
  res.once('finish', () => {
    const socket = req.socket;
    socket.end();
    setTimeout(() => socket.destroy(), L.refusedSocketLingerMs).unref();
  });
  fail(res, failure);
}

/**
 * The control socket of a running router (protocol in control-protocol.ts): operators submit,
 * list, trace, cancel, approve, resolve and export runs while it runs. Nothing else listens: the
 * socket is a unix socket in the state directory, created with mode 0600 (umask 0177 while it is
 * bound, then chmod), never a TCP port.
 *
 * Call order: `ControlServer.listen(host, dir)` once the host is open -> `close()` before the
 * host stops (no new request is read; answers already running finish or fail with `host.stopping`).
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { isObject } from '../core/json-input.js';
import { CodedError } from '../../engine/protocol/coded-error.js';
import { readEventsLimitMax } from './limits.js';
import { controlCloseGraceMs, controlOps, controlRequestBytesMax, controlSocketName, socketPathBytesMax, submitCountMax, traceFrameEventsMax, type ControlFrame, type ControlRequest } from './control-protocol.js';
import type { RouterHost } from './runtime.js';

export class ControlError extends CodedError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = 'ControlError';
  }
}

type Send = (frame: ControlFrame) => Promise<void>;

/** A typed error as a frame carries it; a template's validation errors are named in the message and kept in `detail`. */
export const errorBody = (err: unknown): { code: string; message: string; detail?: unknown } => {
  const e = err as { code?: unknown; message?: unknown; detail?: unknown };
  let message = typeof e?.message === 'string' ? e.message : String(err);
  type Problem = { pointer?: string; code?: string; message?: string };
  const detail = e?.detail as Problem[] | { errors?: Problem[] } | undefined;
  const problems = Array.isArray(detail) ? detail : Array.isArray(detail?.errors) ? detail.errors : [];
  if (problems.length > 0) message += `: ${problems.slice(0, 3).map((p) => `${p.pointer || '/'}: ${p.code}: ${p.message}`).join('; ')}${problems.length > 3 ? '; …' : ''}`;
  return { code: typeof e?.code === 'string' ? e.code : 'router.internal', message, ...(e?.detail !== undefined ? { detail: e.detail } : {}) };
};

function field<T>(request: ControlRequest, name: string, check: (v: unknown) => boolean, what: string, optional = false): T {
  const value = request[name];
  if (value === undefined && optional) return undefined as T;
  if (!check(value)) throw new ControlError('control.bad-request', `${request.op}: ${name} must be ${what}`);
  return value as T;
}
const isString = (v: unknown) => typeof v === 'string' && v.length > 0;

export class ControlServer {
  private readonly sockets = new Set<net.Socket>();
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly server: net.Server,
    readonly socketPath: string,
  ) {}

  /** Binds `<dir>/control.sock` (a leftover of a previous process is replaced: the caller owns the directory's LOCK). */
  static async listen(host: RouterHost, dir: string): Promise<ControlServer> {
    const socketPath = path.join(path.resolve(dir), controlSocketName);
    if (Buffer.byteLength(socketPath) > socketPathBytesMax) {
      throw new ControlError('control.path-too-long', `${socketPath} is ${Buffer.byteLength(socketPath)} bytes; a unix socket path holds at most ${socketPathBytesMax}: use a shorter state directory`);
    }
    fs.rmSync(socketPath, { force: true });
    let control: ControlServer | undefined;
    const server = net.createServer({ allowHalfOpen: true }, (socket) => control!.accept(socket, host));
    control = new ControlServer(server, socketPath);
    const previous = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(socketPath, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } finally {
      process.umask(previous);
    }
    fs.chmodSync(socketPath, 0o600);
    return control;
  }

  /** Stops accepting connections and requests; resolves once every connection is closed. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      // An answer being written may finish; a client that keeps its end open is cut after a moment.
      for (const socket of this.sockets) {
        socket.end();
        setTimeout(() => socket.destroy(), controlCloseGraceMs).unref();
      }
      fs.rmSync(this.socketPath, { force: true });
    });
    return this.closing;
  }

  private accept(socket: net.Socket, host: RouterHost): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const send: Send = (frame) =>
      new Promise((resolve) => {
        if (socket.destroyed) return resolve();
        if (socket.write(`${JSON.stringify(frame)}\n`)) resolve();
        else socket.once('drain', resolve);
      });
    let buffered = '';
    let queue = Promise.resolve();
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.trim() === '') continue;
        queue = queue.then(() => this.answer(line, host, send));
      }
      if (Buffer.byteLength(buffered) > controlRequestBytesMax) {
        buffered = '';
        queue = queue.then(async () => {
          await send({ kind: 'Error', error: { code: 'control.request-too-large', message: `a request line holds at most ${controlRequestBytesMax} bytes` }, end: true });
          socket.end();
        });
      }
    });
    socket.on('end', () => void queue.then(() => socket.end()));
  }

  private async answer(line: string, host: RouterHost, sendRaw: Send): Promise<void> {
    let request: ControlRequest;
    try {
      request = JSON.parse(line) as ControlRequest;
      if (!isObject(request) || !controlOps.includes(request.op)) throw new ControlError('control.bad-request', `unknown op ${JSON.stringify((request as { op?: unknown })?.op)}; one of ${controlOps.join(', ')}`);
    } catch (err) {
      const body = err instanceof SyntaxError ? { code: 'control.bad-request', message: `a request is one line of JSON: ${err.message}` } : errorBody(err);
      await sendRaw({ kind: 'Error', error: body, end: true });
      return;
    }
    const id = request.id;
    const send: Send = (frame) => sendRaw(id === undefined ? frame : { id, ...frame });
    if (this.closing) {
      await send({ kind: 'Error', error: { code: 'host.stopping', message: 'the router host is stopping' }, end: true });
      return;
    }
    try {
      await this.handle(request, host, send);
    } catch (err) {
      await send({ kind: 'Error', error: errorBody(err), end: true });
    }
  }

  private async handle(request: ControlRequest, host: RouterHost, send: Send): Promise<void> {
    const result = (body: Record<string, unknown>) => send({ kind: 'Result', ...body, end: true });
    const runId = () => field<string>(request, 'runId', isString, 'a run id');
    switch (request.op) {
      case 'submit':
        return submit(request, host, send);
      case 'list': {
        const statuses = field<string[] | undefined>(request, 'statuses', (v) => Array.isArray(v) && v.every(isString), 'a list of statuses', true);
        const limit = field<number | undefined>(request, 'limit', (v) => Number.isInteger(v) && (v as number) > 0, 'a positive integer', true);
        return result({ runs: host.listRunSummaries({ statuses, limit }) });
      }
      case 'get':
        return result({ run: host.getRun(runId()) });
      case 'trace': {
        const id = runId();
        host.getRun(id); // run.not-found before any frame
        let after = field<number | undefined>(request, 'afterSeq', (v) => Number.isInteger(v) && (v as number) >= 0, 'a seq', true) ?? 0;
        for (;;) {
          const page = host.store.readEvents(id, after, Math.min(traceFrameEventsMax, readEventsLimitMax));
          if (page.events.length > 0) await send({ kind: 'Events', events: page.events.map((e) => JSON.parse(e)) });
          after = page.lastSeq;
          if (!page.more || page.events.length === 0) break;
        }
        return send({ kind: 'TraceDone', lastSeq: after, end: true });
      }
      case 'cancel':
        return result({ activation: await host.cancel(runId(), field<string | undefined>(request, 'reason', isString, 'a string', true)) });
      case 'approve': {
        const id = runId();
        const nodeId = field<string>(request, 'nodeId', isString, 'a node id');
        const by = field<string>(request, 'by', isString, 'who decides');
        const approved = field<boolean | undefined>(request, 'approved', (v) => typeof v === 'boolean', 'true or false', true);
        const comment = field<string | undefined>(request, 'comment', (v) => typeof v === 'string', 'a string', true);
        return result({ activation: await host.approve(id, nodeId, { by, approved, comment }) });
      }
      case 'resolve': {
        const id = runId();
        const nodeId = field<string>(request, 'nodeId', isString, 'a node id');
        const by = field<string>(request, 'by', isString, 'who resolves');
        const retry = field<boolean | undefined>(request, 'retry', (v) => typeof v === 'boolean', 'true or false', true);
        const fail = field<string | undefined>(request, 'fail', (v) => typeof v === 'string', 'a reason', true);
        const item = field<number | undefined>(request, 'item', (v) => Number.isInteger(v) && (v as number) >= 0, 'an item index', true);
        const given = [retry === true, fail !== undefined, Object.hasOwn(request, 'succeeded')].filter(Boolean).length;
        if (given !== 1) throw new ControlError('control.bad-request', 'resolve: give exactly one of succeeded (the output), retry or fail');
        return result({ activation: await host.resolve(id, nodeId, { by, retry, fail, item, succeeded: request.succeeded }) });
      }
      case 'unpark':
        return result({ unparked: host.unpark(runId()) });
      case 'export':
        return result({ export: host.exportRun(runId()) });
      case 'stats':
        return result({ stats: host.stats() });
    }
  }
}

/**
 * Launches `count` runs of one template, one after the other, answering each run id as soon as
 * its `run.accepted` is durable; a refused template or input is one Error for the submission.
 */
async function submit(request: ControlRequest, host: RouterHost, send: Send): Promise<void> {
  const template = field<Record<string, unknown>>(request, 'template', isObject, 'a template object');
  const count = field<number | undefined>(request, 'count', (v) => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= submitCountMax, `an integer in 1..${submitCountMax}`, true) ?? 1;
  const dependencies = field<{ template: unknown; revision: number }[] | undefined>(request, 'dependencies', (v) => Array.isArray(v), 'a list of { template, revision }', true) ?? [];
  const input = request.input ?? {};
  let accepted = 0;
  try {
    const plan = host.compile(template, dependencies);
    for (let index = 0; index < count; index++) {
      const { runId } = await host.launch({ type: 'plan', plan }, input);
      accepted++;
      await send({ kind: 'RunAccepted', index, runId });
    }
  } catch (err) {
    await send({ kind: 'Error', error: errorBody(err), accepted, end: true });
    return;
  }
  await send({ kind: 'SubmitDone', accepted, end: true });
}

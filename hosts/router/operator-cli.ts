/**
 * The operator's verbs of `agent-workflow router …`: they talk to a running router through its
 * control socket (`<dir>/control.sock`, control-protocol.ts) and print versioned JSON lines.
 *
 *   router submit  --dir D <template.json> [--input <file|json>] [--count N]   one RunAccepted line per run
 *   router submit  --dir D --runs <manifest.json>                              as accepted; one Error line per
 *                                                                              refused entry, the others go on
 *   router list    --dir D [--status s1,s2] [--limit N]                        RunList
 *   router get     --dir D <run id>                                           Run
 *   router trace   --dir D <run id>                                           the run's events, one JSON line each
 *   router cancel  --dir D <run id> [--reason text]                           RunResult
 *   router approve --dir D <run id> <node id> --by who [--comment text]       RunResult (reject: the same)
 *   router resolve --dir D <run id> <node id> --by who (--succeeded <file|json> | --retry | --fail reason) [--item N]
 *   router unpark  --dir D <run id>                                           Unparked (a run that killed the router twice)
 *   router export  --dir D <run id> [--out file]                              the export (Node/browser format)
 *   router stats   --dir D                                                    RouterStats
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { CodedError } from '../../engine/protocol/coded-error.js';
import { controlSocketName, type ControlFrame, type ControlRequest } from './control-protocol.js';
import { printer } from '../shared/cli-output.js';

const apiVersion = 'agent-workflow.cli/v1';

export const operatorVerbs = ['submit', 'list', 'get', 'trace', 'cancel', 'approve', 'reject', 'resolve', 'unpark', 'export', 'stats'] as const;
export type OperatorVerb = (typeof operatorVerbs)[number];

/** Exit codes of the operator verbs (a subset of the router's, see cli.ts). */
export const operatorExitCodes = { ok: 0, refused: 1, usage: 2, notFound: 6, notRunning: 69, internal: 70 } as const;

export class OperatorUsageError extends CodedError {
  constructor(message: string) {
    super('cli.usage', message);
  }
}

class NotRunningError extends CodedError {
  constructor(message: string) {
    super('router.not-running', message);
  }
}

const print = printer(apiVersion);

interface Parsed {
  positional: string[];
  options: Map<string, string | true>;
}

const flagOptions = new Set(['retry']);

function parse(argv: readonly string[]): Parsed {
  const positional: string[] = [];
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(2, eq) : arg.slice(2);
    if (eq > 0) options.set(name, arg.slice(eq + 1));
    else if (flagOptions.has(name)) options.set(name, true);
    else {
      const value = argv[++i];
      if (value === undefined) throw new OperatorUsageError(`option ${arg} needs a value`);
      options.set(name, value);
    }
  }
  return { positional, options };
}

function option(args: Parsed, name: string): string | undefined {
  const v = args.options.get(name);
  if (v === true) throw new OperatorUsageError(`option --${name} needs a value`);
  return v;
}

function only(args: Parsed, allowed: readonly string[]): void {
  for (const name of args.options.keys()) if (name !== 'dir' && !allowed.includes(name)) throw new OperatorUsageError(`unknown option --${name}`);
}

function need(args: Parsed, count: number, what: string): string[] {
  if (args.positional.length !== count) throw new OperatorUsageError(`expected ${what}`);
  return args.positional;
}

class JsonArgError extends CodedError {}

/** A JSON option or manifest field: an existing file is read, anything else is inline JSON. */
function readJson(value: string, what: string, base = process.cwd()): unknown {
  const file = isAbsolute(value) ? value : resolve(base, value);
  const text = existsSync(file) ? readFileSync(file, 'utf8') : value;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new JsonArgError('cli.bad-json', `${what} is neither a readable file nor valid JSON: ${(err as Error).message}`);
  }
}

function readTemplateFile(file: string): unknown {
  if (!existsSync(file)) throw new JsonArgError('cli.not-found', `template file ${file} does not exist`);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new JsonArgError('template.bad-json', `${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/** One connection to the control socket; requests are answered in order. */
class ControlClient {
  private buffered = '';
  private readonly waiting: ((frame: ControlFrame | undefined) => void)[] = [];
  private readonly frames: (ControlFrame | undefined)[] = [];
  private closed = false;

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buffered += chunk;
      let nl: number;
      while ((nl = this.buffered.indexOf('\n')) >= 0) {
        const line = this.buffered.slice(0, nl);
        this.buffered = this.buffered.slice(nl + 1);
        this.push(JSON.parse(line) as ControlFrame);
      }
    });
    const end = () => {
      this.closed = true;
      this.push(undefined);
    };
    socket.on('close', end);
    socket.on('error', end);
  }

  static connect(dir: string): Promise<ControlClient> {
    const socketPath = join(resolve(dir), controlSocketName);
    return new Promise((resolvePromise, reject) => {
      const socket = net.createConnection(socketPath);
      socket.once('connect', () => resolvePromise(new ControlClient(socket)));
      socket.once('error', (err: NodeJS.ErrnoException) => {
        const why = err.code === 'ENOENT' ? 'no control socket' : err.code === 'ECONNREFUSED' ? 'a control socket nobody listens on' : err.message;
        const hint = existsSync(join(resolve(dir), 'journal.log')) ? 'start it with `agent-workflow router start --dir …`' : `${dir} is not a router state directory`;
        reject(new NotRunningError(`no router is running on ${dir} (${why}); ${hint}`));
      });
    });
  }

  private push(frame: ControlFrame | undefined): void {
    const waiter = this.waiting.shift();
    if (waiter) waiter(frame);
    else this.frames.push(frame);
  }

  private next(): Promise<ControlFrame | undefined> {
    if (this.frames.length > 0) return Promise.resolve(this.frames.shift());
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((r) => this.waiting.push(r));
  }

  /** Sends one request and hands every frame of its answer to `onFrame`; resolves with the last one. */
  async request(request: ControlRequest, onFrame: (frame: ControlFrame) => void = () => undefined): Promise<ControlFrame> {
    this.socket.write(`${JSON.stringify(request)}\n`);
    for (;;) {
      const frame = await this.next();
      if (frame === undefined) throw new NotRunningError('the router closed the control socket before it answered (it is stopping)');
      onFrame(frame);
      if (frame.end) return frame;
    }
  }

  close(): void {
    this.socket.end();
  }
}

const exitOfError = (code: string) => (code.endsWith('not-found') ? operatorExitCodes.notFound : operatorExitCodes.refused);

function reportError(error: { code: string; message: string }, extra: Record<string, unknown> = {}): number {
  print('Error', { ...extra, error });
  process.stderr.write(`agent-workflow router: ${error.code}: ${error.message}\n`);
  return exitOfError(error.code);
}

interface SubmitEntry {
  template: () => unknown;
  input: () => unknown;
  count: number;
}

function submitEntries(args: Parsed): SubmitEntry[] {
  const manifest = option(args, 'runs');
  if (manifest !== undefined) {
    if (args.positional.length > 0 || args.options.has('input') || args.options.has('count')) throw new OperatorUsageError('give either --runs <manifest.json> or <template.json> [--input] [--count]');
    if (!existsSync(manifest)) throw new OperatorUsageError(`manifest ${manifest} does not exist`);
    const base = dirname(resolve(manifest));
    let list: unknown;
    try {
      list = JSON.parse(readFileSync(manifest, 'utf8'));
    } catch (err) {
      throw new OperatorUsageError(`${manifest} is not valid JSON: ${(err as Error).message}`);
    }
    if (!Array.isArray(list)) throw new OperatorUsageError(`${manifest} must hold a JSON list of { template, input, count }`);
    return list.map((e: { template?: unknown; input?: unknown; count?: unknown }) => ({
      template: () => {
        if (typeof e?.template !== 'string') throw new JsonArgError('cli.bad-manifest', 'an entry needs "template": the path of a template file');
        return readTemplateFile(isAbsolute(e.template) ? e.template : resolve(base, e.template));
      },
      input: () => (typeof e?.input === 'string' ? readJson(e.input, 'input', base) : (e?.input ?? {})),
      count: typeof e?.count === 'number' ? e.count : 1,
    }));
  }
  const [file] = need(args, 1, 'a template file (or --runs <manifest.json>)');
  const inputArg = option(args, 'input');
  const countArg = option(args, 'count');
  const count = countArg === undefined ? 1 : Number(countArg);
  if (!Number.isInteger(count) || count < 1) throw new OperatorUsageError('--count must be a positive integer');
  return [{ template: () => readTemplateFile(file!), input: () => (inputArg === undefined ? {} : readJson(inputArg, '--input')), count }];
}

/** Submits each entry in turn: its run ids print as they are accepted; a refused entry prints its error and the next goes on. */
async function submit(client: ControlClient, entries: SubmitEntry[]): Promise<number> {
  let refused = 0;
  let accepted = 0;
  for (const [entry, e] of entries.entries()) {
    let template: unknown;
    let input: unknown;
    try {
      template = e.template();
      input = e.input();
    } catch (err) {
      refused++;
      const c = err as CodedError;
      reportError({ code: c.code ?? 'cli.bad-json', message: c.message }, { entry });
      continue;
    }
    const last = await client.request({ op: 'submit', id: entry, template, input, count: e.count }, (frame) => {
      if (frame.kind === 'RunAccepted') {
        accepted++;
        print('RunAccepted', { entry, index: frame.index, runId: frame.runId });
      }
    });
    if (last.kind === 'Error') {
      refused++;
      reportError(last.error!, { entry, accepted: last.accepted });
    }
  }
  print('SubmitSummary', { entries: entries.length, accepted, refused });
  return refused === 0 ? operatorExitCodes.ok : operatorExitCodes.refused;
}

async function runVerb(verb: OperatorVerb, args: Parsed, dir: string): Promise<number> {
  // Everything a verb needs from the command line is checked before connecting.
  let request: ControlRequest | undefined;
  let entries: SubmitEntry[] | undefined;
  let out: string | undefined;
  switch (verb) {
    case 'submit':
      only(args, ['runs', 'input', 'count']);
      entries = submitEntries(args);
      break;
    case 'list': {
      only(args, ['status', 'limit']);
      need(args, 0, 'no positional argument');
      const status = option(args, 'status');
      const limit = option(args, 'limit');
      if (limit !== undefined && !/^[1-9][0-9]*$/.test(limit)) throw new OperatorUsageError('--limit must be a positive integer');
      request = { op: 'list', ...(status ? { statuses: status.split(',') } : {}), ...(limit ? { limit: Number(limit) } : {}) };
      break;
    }
    case 'get':
    case 'trace':
    case 'unpark':
    case 'stats':
      only(args, []);
      request = verb === 'stats' ? (need(args, 0, 'no positional argument'), { op: 'stats' }) : { op: verb, runId: need(args, 1, 'a run id')[0] };
      break;
    case 'export':
      only(args, ['out']);
      out = option(args, 'out');
      request = { op: 'export', runId: need(args, 1, 'a run id')[0] };
      break;
    case 'cancel':
      only(args, ['reason']);
      request = { op: 'cancel', runId: need(args, 1, 'a run id')[0], reason: option(args, 'reason') ?? 'cancelled by an operator' };
      break;
    case 'approve':
    case 'reject': {
      only(args, ['by', 'comment']);
      const [runId, nodeId] = need(args, 2, 'a run id and a node id');
      const by = option(args, 'by') ?? process.env.USER ?? 'operator';
      const comment = option(args, 'comment');
      request = { op: 'approve', runId, nodeId, by, approved: verb === 'approve', ...(comment !== undefined ? { comment } : {}) };
      break;
    }
    case 'resolve': {
      only(args, ['by', 'succeeded', 'retry', 'fail', 'item']);
      const [runId, nodeId] = need(args, 2, 'a run id and a node id');
      const succeeded = option(args, 'succeeded');
      const fail = option(args, 'fail');
      const retry = args.options.has('retry');
      if ([succeeded !== undefined, fail !== undefined, retry].filter(Boolean).length !== 1) throw new OperatorUsageError('give exactly one of --succeeded <output.json>, --retry, --fail <reason>');
      const item = option(args, 'item');
      if (item !== undefined && !/^(0|[1-9][0-9]*)$/.test(item)) throw new OperatorUsageError('--item takes the index of a foreach item');
      let output: unknown;
      if (succeeded !== undefined) {
        try {
          output = readJson(succeeded, '--succeeded');
        } catch (err) {
          throw new OperatorUsageError((err as Error).message);
        }
      }
      request = {
        op: 'resolve',
        runId,
        nodeId,
        by: option(args, 'by') ?? process.env.USER ?? 'operator',
        ...(item !== undefined ? { item: Number(item) } : {}),
        ...(succeeded !== undefined ? { succeeded: output } : {}),
        ...(fail !== undefined ? { fail } : {}),
        ...(retry ? { retry: true } : {}),
      };
      break;
    }
  }
  const client = await ControlClient.connect(dir);
  try {
    if (entries) return await submit(client, entries);
    const frame = await client.request(request!, (f) => {
      if (f.kind === 'Events') for (const e of f.events as unknown[]) process.stdout.write(`${JSON.stringify(e)}\n`);
    });
    if (frame.kind === 'Error') return reportError(frame.error!);
    switch (verb) {
      case 'list':
        print('RunList', { runs: frame.runs });
        break;
      case 'get':
        print('Run', { run: frame.run });
        break;
      case 'stats':
        print('RouterStats', { stats: frame.stats });
        break;
      case 'unpark':
        print('Unparked', frame.unparked as Record<string, unknown>);
        break;
      case 'export': {
        const text = `${JSON.stringify(frame.export)}\n`;
        if (out) {
          writeFileSync(out, text);
          process.stderr.write(`wrote ${(frame.export as { events: unknown[] }).events.length} events of ${request!.runId} to ${out}\n`);
        } else process.stdout.write(text);
        break;
      }
      case 'trace':
        break;
      default:
        print('RunResult', { runId: request!.runId, ...(frame.activation as Record<string, unknown>) });
    }
    return operatorExitCodes.ok;
  } finally {
    client.close();
  }
}

/** Entry of an operator verb; `argv` follows the verb. */
export async function runOperatorCommand(verb: OperatorVerb, argv: readonly string[]): Promise<number> {
  // A reader that stops early (`router trace … | head`) is not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(operatorExitCodes.ok);
    throw err;
  });
  let args: Parsed;
  let dir: string;
  try {
    args = parse(argv);
    dir = option(args, 'dir') ?? process.env.AGENT_WORKFLOW_ROUTER_DIR ?? '';
    if (!dir) throw new OperatorUsageError('--dir <state dir> is required (or AGENT_WORKFLOW_ROUTER_DIR)');
  } catch (err) {
    process.stderr.write(`agent-workflow router ${verb}: ${(err as Error).message}\n`);
    return operatorExitCodes.usage;
  }
  try {
    return await runVerb(verb, args, dir);
  } catch (err) {
    if (err instanceof OperatorUsageError) {
      process.stderr.write(`agent-workflow router ${verb}: ${err.message}\n`);
      return operatorExitCodes.usage;
    }
    const e = err as { code?: string; message?: string };
    const code = e.code ?? 'router.internal';
    reportError({ code, message: e.message ?? String(err) });
    return code === 'router.not-running' ? operatorExitCodes.notRunning : code === 'router.internal' ? operatorExitCodes.internal : exitOfError(code);
  }
}

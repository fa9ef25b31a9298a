/**
 * `agent-workflow router start --dir <state dir> --profile edge|standalone [--config <host module>]
 *  [--cadence-ms N] [--runs <manifest.json>] [--until-idle] [--accept-loss]`
 *
 * Starts a router host and runs its cadence until SIGTERM/SIGINT (then stops in order and exits
 * 0). Started without the memory flags (memory-flags.ts), it re-executes itself with them. This
 * module and everything it loads use Node built-ins, the engine component and QuickJS only.
 *
 * The host module exports `{ tools, agents?, approvals?, credentials?, authorities?, capture?, dir?,
 * profile?, cadenceMs? }`; a tool with an `executable` is a local tool `{ executable, args,
 * timeoutMs, idempotent, env, cwd }`, one with `execute` runs in process. `--runs` names a JSON list of
 * `{ "template": file, "input": file | value, "count": N }` launched at start; with
 * `--until-idle` the router stops once nothing can progress and prints a `RouterSummary`.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { needsReexec, parentExited, reexecWithMemoryFlags } from './memory-flags.js';
import type { RouterHost, RouterHostOptions } from './runtime.js';
import { ControlServer, errorBody } from './control-server.js';
import { operatorVerbs, runOperatorCommand, type OperatorVerb } from './operator-cli.js';
import { CodedError } from '../../engine/protocol/coded-error.js';
import { printer } from '../shared/cli-output.js';

const apiVersion = 'agent-workflow.cli/v1';

export const routerUsage = `usage: agent-workflow router start --dir <state dir> --profile edge|standalone [--config <host module>]
                                  [--cadence-ms N] [--runs <manifest.json>] [--until-idle] [--accept-loss]
       agent-workflow router submit --dir <state dir> <template.json> [--input <file|json>] [--count N]
       agent-workflow router submit --dir <state dir> --runs <manifest.json>
       agent-workflow router list|get|trace|cancel|approve|reject|resolve|unpark|export|stats --dir <state dir> …   (docs/router.md)`;

/**
 * `notAllCompleted`: with `--until-idle`, some run did not complete or a `--runs` entry was
 * refused; for the operator verbs, the router refused the request (or an entry of a submission).
 * `damaged`: the journal or receipt log lost acknowledged records (`store.truncated` /
 * `store.corrupt`); see `--accept-loss`. `notRouterDir`: the directory belongs to the Node host
 * (`store.not-a-store`). `notRunning`: no router listens on the directory's control socket.
 */
export const routerExitCodes = { ok: 0, notAllCompleted: 1, usage: 2, notFound: 6, damaged: 65, notRouterDir: 66, notRunning: 69, internal: 70 } as const;

class UsageError extends CodedError {
  constructor(message: string) {
    super('cli.usage', message);
  }
}

const print = printer(apiVersion);

interface StartArgs {
  dir?: string;
  profile?: string;
  config?: string;
  cadenceMs?: number;
  runs?: string;
  untilIdle: boolean;
  acceptLoss: boolean;
}

function parse(argv: readonly string[]): StartArgs {
  const [verb, ...rest] = argv;
  if (verb !== 'start') throw new UsageError(verb === undefined ? 'missing verb' : `unknown verb ${JSON.stringify(verb)} (start, ${operatorVerbs.join(', ')})`);
  const out: StartArgs = { untilIdle: false, acceptLoss: false };
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') ? (eq > 0 ? arg.slice(2, eq) : arg.slice(2)) : '';
    if (name === 'until-idle') {
      out.untilIdle = true;
      continue;
    }
    if (name === 'accept-loss') {
      out.acceptLoss = true;
      continue;
    }
    const value = eq > 0 ? arg.slice(eq + 1) : rest[++i];
    if (value === undefined) throw new UsageError(`option ${arg} needs a value`);
    switch (name) {
      case 'dir':
      case 'profile':
      case 'config':
      case 'runs':
        out[name] = value;
        break;
      case 'cadence-ms': {
        const n = Number(value);
        if (!Number.isInteger(n) || n < 1 || n > 60_000) throw new UsageError('--cadence-ms must be an integer in 1..60000');
        out.cadenceMs = n;
        break;
      }
      default:
        throw new UsageError(`unknown option ${arg}`);
    }
  }
  return out;
}

async function loadHostModule(file: string | undefined): Promise<Partial<RouterHostOptions> & { configDir?: string }> {
  if (file === undefined) return {};
  const path = resolve(file);
  if (!existsSync(path)) throw new UsageError(`host module ${path} does not exist`);
  const mod = await import(pathToFileURL(path).href);
  const config = (mod.default ?? mod) as Partial<RouterHostOptions>;
  if (config === null || typeof config !== 'object') throw new UsageError(`host module ${path} must export an object`);
  return { ...config, configDir: dirname(path) };
}

interface ManifestEntry {
  template?: unknown;
  input?: unknown;
  count?: unknown;
}

/** One entry of a `--runs` manifest; its files are read when it is launched, so a bad entry is refused alone. */
interface RunsEntry {
  read(): { template: Record<string, unknown>; input: unknown; count: number };
}

class ManifestError extends CodedError {}

function readManifest(file: string): RunsEntry[] {
  const base = dirname(resolve(file));
  let entries: ManifestEntry[];
  try {
    entries = JSON.parse(readFileSync(file, 'utf8')) as ManifestEntry[];
  } catch (err) {
    throw new UsageError(`--runs ${file}: ${(err as Error).message}`);
  }
  if (!Array.isArray(entries)) throw new UsageError(`${file} must hold a JSON list of { template, input, count }`);
  const at = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  const json = (p: string, what: string) => {
    try {
      return JSON.parse(readFileSync(at(p), 'utf8'));
    } catch (err) {
      throw new ManifestError((err as NodeJS.ErrnoException).code === 'ENOENT' ? 'cli.not-found' : 'cli.bad-json', `${what} ${at(p)}: ${(err as Error).message}`);
    }
  };
  return entries.map((e) => ({
    read: () => {
      if (typeof e?.template !== 'string') throw new ManifestError('cli.bad-manifest', 'an entry needs "template": the path of a template file');
      const count = e.count ?? 1;
      if (!Number.isInteger(count) || (count as number) < 1) throw new ManifestError('cli.bad-manifest', '"count" must be a positive integer');
      return { template: json(e.template, 'template') as Record<string, unknown>, input: typeof e.input === 'string' ? json(e.input, 'input') : (e.input ?? {}), count: count as number };
    },
  }));
}

/** SIGTERM, SIGINT or SIGHUP, or the end of the wrapper that re-executed this router (memory-flags.ts). */
function waitForSignal(): Promise<string> {
  return new Promise((resolve) => {
    const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];
    const handler = (signal: NodeJS.Signals | string) => {
      for (const s of signals) process.off(s, handler);
      resolve(signal);
    };
    for (const s of signals) process.on(s, handler);
    void parentExited().then(handler);
  });
}

async function start(args: StartArgs): Promise<number> {
  const host = await loadHostModule(args.config);
  const dirOption = args.dir ?? (typeof host.dir === 'string' ? resolve(host.configDir ?? '.', host.dir) : undefined);
  if (!dirOption) throw new UsageError('--dir is required (or `dir` in the host module)');
  const profile = args.profile ?? host.profile ?? 'edge';
  if (profile !== 'edge' && profile !== 'standalone') throw new UsageError(`--profile must be edge or standalone, not ${JSON.stringify(profile)}`);
  const manifest = args.runs ? readManifest(args.runs) : [];
  const signalled = waitForSignal(); // before anything can take a signal's default action
  const { RouterHost } = await import('./runtime.js');
  const router: RouterHost = await RouterHost.open({ ...host, dir: dirOption, profile, cadenceMs: args.cadenceMs ?? host.cadenceMs, acceptLoss: args.acceptLoss });
  let control: ControlServer | undefined;
  try {
    control = await ControlServer.listen(router, dirOption);
    print('RouterStarted', { pid: process.pid, dir: dirOption, profile, execArgv: process.execArgv, recovery: router.recovery, controlSocket: control.socketPath });
    return await serve(router, control, manifest, args.untilIdle, signalled);
  } finally {
    await control?.close();
    await router.stop(); // a no-op when already stopped; after an error it ends the cadence
  }
}

/**
 * Launches the `--runs` manifest: each run id is printed as soon as its `run.accepted` is durable;
 * a refused entry prints its typed error (`EntryRefused`) and the next entry goes on.
 */
async function launchManifest(router: RouterHost, manifest: RunsEntry[]): Promise<{ launched: string[]; refused: number }> {
  const launched: string[] = [];
  let refused = 0;
  for (const [entry, e] of manifest.entries()) {
    let index = 0;
    try {
      const { template, input, count } = e.read();
      const plan = router.compile(template);
      for (; index < count; index++) {
        const { runId } = await router.launch({ type: 'plan', plan }, input);
        launched.push(runId);
        print('RunAccepted', { entry, index, runId });
      }
    } catch (err) {
      if ((err as { code?: string }).code === 'host.stopping') throw err;
      refused++;
      const error = errorBody(err);
      print('EntryRefused', { entry, accepted: index, error });
      process.stderr.write(`agent-workflow router: --runs entry ${entry}: ${error.code}: ${error.message}\n`);
    }
  }
  return { launched, refused };
}

async function serve(router: RouterHost, control: ControlServer, manifest: RunsEntry[], untilIdle: boolean, signalled: Promise<string>): Promise<number> {
  const stopOnSignal = signalled.then(async (signal) => {
    process.stderr.write(`agent-workflow router: ${signal}: stopping\n`);
    await control.close();
    await router.stop();
    return signal;
  });
  const { launched, refused } = await launchManifest(router, manifest);
  if (manifest.length > 0) print('RunsLaunched', { runIds: launched, refused });
  if (!untilIdle) {
    await stopOnSignal;
    return routerExitCodes.ok;
  }
  const reason = await Promise.race([router.whenIdle().then(() => 'idle'), stopOnSignal]);
  if (reason !== 'idle') return routerExitCodes.ok;
  await control.close();
  const runs = router.listRuns().map((r) => ({ runId: r.runId, status: r.status, lastSeq: r.lastSeq, ...(router.parkedRecord(r.runId) ? { parked: router.parkedRecord(r.runId) } : {}) }));
  const stats = router.stats();
  await router.stop();
  const usage = process.resourceUsage();
  print('RouterSummary', { reason, runs, stats, peakRssBytes: usage.maxRSS * 1024 });
  return refused === 0 && runs.every((r) => r.status === 'completed') ? routerExitCodes.ok : routerExitCodes.notAllCompleted;
}

/** Entry of `agent-workflow router …`; `argv` starts with the verb (`start`, or an operator verb). */
export async function runRouterCommand(argv: readonly string[]): Promise<number> {
  const verb = argv[0];
  if (verb !== undefined && (operatorVerbs as readonly string[]).includes(verb)) {
    // A client of a running router: no engine, no memory flags, no re-execution.
    return runOperatorCommand(verb as OperatorVerb, argv.slice(1));
  }
  let args: StartArgs;
  try {
    args = parse(argv);
  } catch (err) {
    process.stderr.write(`agent-workflow router: ${(err as Error).message}\n${routerUsage}\n`);
    return routerExitCodes.usage;
  }
  if (needsReexec()) return reexecWithMemoryFlags();
  try {
    return await start(args);
  } catch (err) {
    const e = err as { code?: string; message?: string };
    if (err instanceof UsageError) {
      process.stderr.write(`agent-workflow router: ${e.message}\n${routerUsage}\n`);
      return routerExitCodes.usage;
    }
    print('Error', { error: { code: e.code ?? 'router.internal', message: e.message ?? String(err) } });
    process.stderr.write(`agent-workflow router: ${e.code ?? 'router.internal'}: ${e.message ?? String(err)}\n`);
    if (e.code === 'store.truncated' || e.code === 'store.corrupt') return routerExitCodes.damaged;
    return e.code === 'store.not-a-store' ? routerExitCodes.notRouterDir : routerExitCodes.internal;
  }
}

function isMainModule(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return pathToFileURL(realpathSync(entry)).href === import.meta.url;
  } catch {
    return false;
  }
}

if (isMainModule()) {
  runRouterCommand(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`agent-workflow router: ${(err as Error).stack ?? err}\n`);
      process.exitCode = routerExitCodes.internal;
    },
  );
}

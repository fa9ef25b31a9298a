#!/usr/bin/env node
// agent-workflow: the command line of the Node host. Machine output is versioned JSON / JSONL on
// stdout; progress for people goes to stderr. Exit codes are listed in `exitCodes`.
import { readFileSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { WorkflowRuntime } from '../runtime.js';
import { extraCommands } from './commands/index.js';
import { resolveRunTarget, runPublished } from './commands/catalog.js';
import { printQueued } from './queued.js';

import { CliError as WorkflowError, type CliCommand } from './command.js';
import { parseArgs, optionString, UsageError, type ParsedArgs } from './args.js';
import { loadHostModule } from './host-module.js';

export const exitCodes = {
  ok: 0,
  runFailed: 1,
  usage: 2,
  invalid: 3,
  paused: 4,
  cancelled: 5,
  notFound: 6,
  replayDiverged: 7,
  conflict: 8,
  internal: 70,
} as const;

const cliApiVersion = 'agent-workflow.cli/v1';

const usage = `usage: agent-workflow <command> [options]

commands:
  validate <template.json>                         check a template; every error with code and JSON pointer
  run <template.json | id@revision> [--input <json|file>] [--deps <dir>]
                                                   run a template (deps: <id>@<rev>.json of called workflows)
  trace <run-id> [--format jsonl|json|text]        print every event of a run
  runs [--status <s>] [--limit N]                  list runs, newest first
  resume <run-id>                                  resume a run (after a crash, or to re-check authority)
  cancel <run-id> [--reason <text>]                cancel a run
  approve <run-id> <node-id> [--by <name>] [--comment <text>]
  reject <run-id> <node-id> [--by <name>] [--comment <text>]
  resolve <run-id> <node-id> --succeeded <output.json> | --retry | --fail <reason> [--item N] [--by <name>]
  export <run-id> [--out <file>]                   write a self-contained journal export
  replay <run-id> | --from <export.json> [--mode inspect|recorded|live] [--template <edited.json>]
  replay <run-id|file> --web                      open the browser replay page (also: replay-web)
  draft put <file> | draft get <id>                edit a mutable draft (compare-and-set)
  publish <id> --expected <draft-revision>         publish an immutable revision
  search <text> | describe <id>@<rev> --view schema|template|plan | diff <id>@<a> <id>@<b>
  migrate-template <legacy.json> [--out <file>]    convert a 0.2-protocol template
  router start --dir <state dir> --profile edge|standalone
  serve [--max-runs N] [--drain-ms N]              a worker until SIGTERM/SIGINT: claims queued runs and runs whose
                                                   owner is gone, fires the module's cron triggers
  mcp [--config <host module>]                     serve the runtime as MCP tools on stdio
  sandbox serve [--port N] [--host H] [--token-file F] [--insecure-no-auth]

common options:
  --config <host module>   default ./agent-workflow.config.mjs
  --dir <state dir>        default ./.agent-workflow (or the host module's dir)
  --store <location>       postgres://… (shared by workers) or a SQLite file (default <dir>/workflow.db);
                           also AGENT_WORKFLOW_STORE or the host module's \`store\`
  --no-wait                (run) commit the run to the queue for a worker and return

exit codes: 0 ok, 1 run failed, 2 usage, 3 invalid template or input, 4 run paused (waiting for a
person), 5 cancelled, 6 not found, 7 replay diverged, 8 owned by another process / command not
applied in time / conflict, 70 internal error`;

export function print(kind: string, body: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ apiVersion: cliApiVersion, kind, ...body })}\n`);
}

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

function readJsonArg(value: string, what: string): unknown {
  const text = existsSync(value) ? readFileSync(value, 'utf8') : value;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new WorkflowError('cli.bad-json', `${what} is neither a readable file nor valid JSON: ${(err as Error).message}`);
  }
}

function readTemplate(file: string): unknown {
  if (!existsSync(file)) throw new WorkflowError('cli.not-found', `template file ${file} does not exist`);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new WorkflowError('template.bad-json', `${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Fixed revisions of called workflows: `<id>@<revision>.json` files in `--deps` or the host module's `dependencies`. */
async function readDependencies(args: ParsedArgs): Promise<{ template: unknown; revision: number }[]> {
  const host = await loadHostModule(optionString(args, 'config'));
  const dir = optionString(args, 'deps') ?? (typeof host.dependencies === 'string' ? resolve(host.configDir ?? '.', host.dependencies) : undefined);
  if (!dir) return [];
  if (!existsSync(dir)) throw new WorkflowError('cli.not-found', `dependency folder ${dir} does not exist`);
  const out: { template: unknown; revision: number }[] = [];
  for (const name of readdirSync(dir).sort()) {
    const m = /^([A-Za-z0-9][A-Za-z0-9._:-]{0,35})@([1-9][0-9]*)\.json$/.exec(name);
    if (m) out.push({ template: readTemplate(join(dir, name)), revision: Number(m[2]) });
  }
  return out;
}

async function openRuntime(args: ParsedArgs): Promise<WorkflowRuntime> {
  const host = await loadHostModule(optionString(args, 'config'));
  const dir = optionString(args, 'dir') ?? (host.dir ? resolve(host.configDir ?? '.', host.dir) : undefined);
  // Loaded on demand: the router's commands must not load better-sqlite3.
  const { WorkflowRuntime } = await import('../runtime.js');
  const store = optionString(args, 'store') ?? process.env.AGENT_WORKFLOW_STORE ?? (typeof host.store === 'string' ? host.store : undefined);
  return WorkflowRuntime.open({ ...host, ...(dir ? { dir } : {}), ...(store ? { store } : {}) });
}

function exitFor(status: string): number {
  switch (status) {
    case 'completed':
      return exitCodes.ok;
    case 'failed':
      return exitCodes.runFailed;
    case 'cancelled':
      return exitCodes.cancelled;
    case 'paused':
      return exitCodes.paused;
    default:
      return exitCodes.ok;
  }
}

function need(args: ParsedArgs, count: number, what: string): string[] {
  if (args.positional.length < count) throw new UsageError(`missing ${what}`);
  return args.positional;
}

async function withRuntime<T>(args: ParsedArgs, fn: (rt: WorkflowRuntime) => Promise<T>): Promise<T> {
  const rt = await openRuntime(args);
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

const commands: Record<string, CliCommand> = {
  validate: {
    flags: [],
    async run(args) {
      const [file] = need(args, 1, 'template file');
      return withRuntime(args, async (rt) => {
        const report = rt.validate(readTemplate(file));
        print('ValidationReport', { file, ...report });
        for (const e of report.errors) progress(`${file}: ${e.pointer || '/'}: ${e.code}: ${e.message}`);
        return report.ok ? exitCodes.ok : exitCodes.invalid;
      });
    },
  },
  run: {
    flags: ['no-wait'],
    async run(args) {
      const [file] = need(args, 1, 'template file');
      const inputArg = optionString(args, 'input');
      const input = inputArg === undefined ? {} : readJsonArg(inputArg, '--input');
      return withRuntime(args, async (rt) => {
        const published = resolveRunTarget(file, rt);
        if (published) return runPublished(rt, published, { input, wait: !args.options.has('no-wait') });
        const template = readTemplate(file);
        const report = rt.validate(template);
        if (!report.ok) {
          print('ValidationReport', { file, ...report });
          for (const e of report.errors) progress(`${file}: ${e.pointer || '/'}: ${e.code}: ${e.message}`);
          return exitCodes.invalid;
        }
        const started = Date.now();
        const noWait = args.options.has('no-wait');
        const handle = await rt.launch({ type: 'inline', template, dependencies: await readDependencies(args) }, { input, actor: 'cli', ...(noWait ? { executionMode: 'background' as const } : {}) });
        if (noWait) return printQueued(rt, handle.runId);
        progress(`run ${handle.runId} accepted`);
        const outcome = await handle.settled();
        progress(`run ${handle.runId} ${outcome.status}${outcome.pausedReason ? ` (${outcome.pausedReason})` : ''} after ${Date.now() - started} ms, ${outcome.seq} events`);
        print('RunResult', { ...outcome });
        return exitFor(outcome.status);
      });
    },
  },
  trace: {
    flags: [],
    async run(args) {
      const [runId] = need(args, 1, 'run id');
      const format = optionString(args, 'format') ?? 'jsonl';
      if (!['jsonl', 'json', 'text'].includes(format)) throw new UsageError('--format must be jsonl, json or text');
      return withRuntime(args, async (rt) => {
        const all: unknown[] = [];
        for (let after = 0; ; ) {
          const page = await rt.readEvents(runId, { afterSeq: after, limit: 1000 });
          for (const e of page.events) {
            if (format === 'jsonl') process.stdout.write(`${JSON.stringify(e)}\n`);
            else if (format === 'text') process.stdout.write(`${String(e.seq).padStart(6)} ${e.occurredAt} ${e.type.padEnd(24)} ${e.node ? `${e.node.id}${e.node.item !== undefined ? `[${e.node.item}]` : ''} #${e.node.attempt}` : ''}\n`);
            else all.push(e);
          }
          after = page.lastSeq;
          if (!page.more) break;
        }
        if (format === 'json') print('Trace', { runId, events: all });
        return exitCodes.ok;
      });
    },
  },
  runs: {
    flags: [],
    async run(args) {
      const status = optionString(args, 'status');
      const limit = Number(optionString(args, 'limit') ?? 50);
      return withRuntime(args, async (rt) => {
        print('RunList', { runs: await rt.listRuns({ statuses: status ? status.split(',') : undefined, limit }) });
        return exitCodes.ok;
      });
    },
  },
  resume: {
    flags: ['no-wait'],
    async run(args) {
      const [runId] = need(args, 1, 'run id');
      return withRuntime(args, async (rt) => {
        const handle = await rt.resume(runId, { by: 'cli' });
        const outcome = args.options.has('no-wait') ? await rt.getRun(runId) : await handle.settled();
        print('RunResult', { ...outcome });
        return exitFor(outcome.status);
      });
    },
  },
  cancel: {
    flags: [],
    async run(args) {
      const [runId] = need(args, 1, 'run id');
      return withRuntime(args, async (rt) => {
        const outcome = await rt.cancel(runId, { reason: optionString(args, 'reason') ?? 'cancelled from the command line', by: 'cli' });
        print('RunResult', { ...outcome });
        return outcome.status === 'cancelled' ? exitCodes.ok : exitFor(outcome.status);
      });
    },
  },
  approve: { flags: [], run: (args) => decide(args, true) },
  reject: { flags: [], run: (args) => decide(args, false) },
  resolve: {
    flags: ['retry'],
    async run(args) {
      const [runId, nodeId] = need(args, 2, 'run id and node id');
      const by = optionString(args, 'by') ?? process.env.USER ?? 'cli';
      const succeeded = optionString(args, 'succeeded');
      const fail = optionString(args, 'fail');
      const retry = args.options.has('retry');
      if ([succeeded !== undefined, fail !== undefined, retry].filter(Boolean).length !== 1) throw new UsageError('give exactly one of --succeeded <output.json>, --retry, --fail <reason>');
      return withRuntime(args, async (rt) => {
        const item = optionString(args, 'item');
        if (item !== undefined && !/^(0|[1-9][0-9]*)$/.test(item)) throw new UsageError('--item takes the index of a foreach item');
        const applied = await rt.resolve(runId, nodeId, { by, ...(item !== undefined ? { item: Number(item) } : {}), ...(succeeded !== undefined ? { succeeded: readJsonArg(succeeded, '--succeeded') } : {}), ...(fail !== undefined ? { fail } : {}), ...(retry ? { retry: true } : {}) });
        const outcome = await rt.follow(runId).settled();
        print('RunResult', { ...outcome, commandId: applied.commandId, appliedBy: applied.appliedBy });
        return exitFor(outcome.status);
      });
    },
  },
  export: {
    flags: [],
    async run(args) {
      const [runId] = need(args, 1, 'run id');
      const out = optionString(args, 'out');
      return withRuntime(args, async (rt) => {
        const exported = await rt.exportRun(runId);
        const text = `${JSON.stringify(exported)}\n`;
        if (out) {
          writeFileSync(out, text);
          progress(`wrote ${exported.events.length} events of ${runId} to ${out}`);
        } else process.stdout.write(text);
        return exitCodes.ok;
      });
    },
  },
  replay: {
    flags: ['web'],
    async run(args) {
      if (args.options.has('web')) {
        const { runReplayWeb } = await import('./commands/browser.js');
        return runReplayWeb(args);
      }
      const requestedMode = optionString(args, 'mode') ?? 'inspect';
      if (requestedMode === 'live') {
        const [runId] = need(args, 1, 'run id');
        return withRuntime(args, async (rt) => {
          const report = await rt.replayLive(runId, { by: 'cli' });
          print('ReplayReport', report);
          return report.identical ? exitCodes.ok : exitCodes.replayDiverged;
        });
      }
      const mode = requestedMode as 'inspect' | 'recorded';
      if (mode !== 'inspect' && mode !== 'recorded') throw new UsageError('--mode must be inspect, recorded or live');
      const edited = optionString(args, 'template');
      const from = optionString(args, 'from');
      let report: Record<string, unknown>;
      if (from) {
        const { parseExport, replayExport } = await import('../export.js');
        if (!existsSync(from)) throw new WorkflowError('cli.not-found', `export file ${from} does not exist`);
        const exported = parseExport(readJsonArg(from, '--from'));
        let editedPlan;
        if (edited) {
          const { EngineInstance } = await import('../../core/engine-instance.js');
          const { nodeComponentLoader } = await import('../component.js');
          const { createScriptImports } = await import('../sandbox.js');
          const scripts = await createScriptImports();
          const engine = await EngineInstance.create(nodeComponentLoader(), { load: () => undefined, ...scripts, log: () => undefined });
          const deps = Object.entries(exported.plan.templates)
            .filter(([key, t]) => key !== exported.plan.root && t.revision !== undefined)
            .map(([, t]) => ({ template: t.template, revision: t.revision! }));
          editedPlan = engine.compile({ root: { template: readTemplate(edited) }, dependencies: deps });
          scripts.evaluator.dispose();
        }
        report = await replayExport(exported, { mode, ...(editedPlan ? { editedPlan } : {}) });
      } else {
        const [runId] = need(args, 1, 'run id (or --from <export.json>)');
        report = await withRuntime(args, async (rt) => rt.replay(runId, { mode, ...(edited ? { editedTemplate: readTemplate(edited) } : {}) }));
      }
      print('ReplayReport', report);
      return mode === 'recorded' && report.identical === false && !edited ? exitCodes.replayDiverged : exitCodes.ok;
    },
  },
  serve: {
    flags: [],
    async run(args) {
      // A worker until SIGTERM or SIGINT: claims queued runs and runs whose owner is gone, and
      // fires the host module's cron triggers. A graceful stop hands back what it cannot finish.
      const host = await loadHostModule(optionString(args, 'config'));
      const maxRuns = positiveInt(optionString(args, 'max-runs'), '--max-runs');
      const drainMs = positiveInt(optionString(args, 'drain-ms'), '--drain-ms');
      return withRuntime(args, async (rt) => {
        const log = (level: string, message: string) => progress(`${level}: ${message}`);
        const worker = await rt.startWorker({ ...(maxRuns ? { maxRuns } : {}), ...(drainMs !== undefined ? { drainMs } : {}), log });
        const { TriggerScheduler } = await import('../triggers.js');
        const scheduler = new TriggerScheduler(rt, log);
        for (const t of (host as { triggers?: any[] }).triggers ?? []) {
          const target = typeof t.template === 'string' ? { type: 'inline', template: readTemplate(resolve(host.configDir ?? '.', t.template)) } : (t.target ?? { type: 'inline', template: t.template });
          scheduler.add({ id: t.id, cron: t.cron, timezone: t.timezone, input: t.input, target });
        }
        print('Serving', { owner: rt.ownerId, maxRuns: maxRuns ?? 64, triggers: scheduler.list().triggers });
        const signal = await new Promise<string>((done) => {
          process.once('SIGINT', () => done('SIGINT'));
          process.once('SIGTERM', () => done('SIGTERM'));
        });
        progress(`agent-workflow serve: ${signal}: stopping (no new claims; calls in flight may finish)`);
        scheduler.stop();
        const stopped = await worker.stop();
        print('Stopped', { signal, drained: stopped.drained, ...worker.stats });
        return exitCodes.ok;
      });
    },
  },
  mcp: {
    flags: [],
    async run(args) {
      // stdout is the MCP channel from here on: progress goes to stderr only.
      return withRuntime(args, async (rt) => {
        const { serveMcp } = await import('../mcp.js');
        const server = await serveMcp(rt);
        progress('agent-workflow: MCP server on stdio');
        await new Promise<void>((resolve) => {
          server.server.onclose = () => resolve();
          process.once('SIGINT', () => resolve());
          process.once('SIGTERM', () => resolve());
        });
        await server.close();
        return exitCodes.ok;
      });
    },
  },
  sandbox: {
    flags: ['insecure-no-auth'],
    async run(args) {
      if (args.positional[0] !== 'serve') throw new UsageError('usage: agent-workflow sandbox serve [--port N]');
      const { runSandboxServeCommand } = await import('../../../sandbox/service/cli.js');
      return runSandboxServeCommand(process.argv.slice(4));
    },
  },
};

Object.assign(commands, extraCommands);

async function decide(args: ParsedArgs, approved: boolean): Promise<number> {
  const [runId, nodeId] = need(args, 2, 'run id and node id');
  const by = optionString(args, 'by') ?? process.env.USER ?? 'cli';
  return withRuntime(args, async (rt) => {
    const applied = await rt.approve(runId, nodeId, { by, approved, ...(optionString(args, 'comment') !== undefined ? { comment: optionString(args, 'comment') } : {}) });
    const outcome = await rt.follow(runId).settled();
    print('RunResult', { ...outcome, commandId: applied.commandId, appliedBy: applied.appliedBy });
    return exitFor(outcome.status);
  });
}

function positiveInt(value: string | undefined, what: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]*$/.test(value)) throw new UsageError(`${what} takes a positive integer`);
  return Number(value);
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stderr.write(`${usage}\n`);
    return name ? exitCodes.ok : exitCodes.usage;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`agent-workflow: unknown command ${JSON.stringify(name)}\n${usage}\n`);
    return exitCodes.usage;
  }
  try {
    return await command.run(parseArgs(rest, command.flags));
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`agent-workflow: ${err.message}\n`);
      return exitCodes.usage;
    }
    const e = err as { code?: string; message?: string; detail?: unknown };
    const code = e.code ?? 'cli.internal';
    print('Error', { error: { code, message: e.message ?? String(err), ...(e.detail !== undefined ? { detail: e.detail } : {}) } });
    progress(`agent-workflow: ${code}: ${e.message ?? String(err)}`);
    if (code.endsWith('not-found')) return exitCodes.notFound;
    if (code.startsWith('template.') || code.startsWith('run.input') || code.startsWith('cli.bad-json') || code === 'workflow.dependency-missing') return exitCodes.invalid;
    if (code === 'cli.internal' || code === 'engine.internal' || code === 'engine.trap') return exitCodes.internal;
    if (code === 'store.conflict' || code === 'command.pending' || code === 'run.owned-elsewhere' || code === 'run.fenced') return exitCodes.conflict;
    return exitCodes.runFailed;
  }
}

// A reader that stops early (`trace … | head`) is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(exitCodes.ok);
  throw err;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`agent-workflow: internal error: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = exitCodes.internal;
  },
);


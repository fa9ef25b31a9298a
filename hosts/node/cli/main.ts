#!/usr/bin/env node
// agent-workflow: the command line of the Node host. Machine output is versioned JSON / JSONL on
// stdout; progress for people goes to stderr. Exit codes are listed in `exitCodes`.
import { preferLeanMemory } from '../../shared/component.js';
import { readFileSync, existsSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { portableIdSource } from '../../../engine/protocol/ids.js';
import { isTerminalStatus } from '../../../engine/protocol/statuses.js';
import type { WorkflowRuntime } from '../runtime.js';
import { extraCommandNames, loadExtraCommand } from './commands/index.js';
import { deliveryTargetFromArgs } from './delivery-args.js';
import { printQueued } from './queued.js';

import { CliError as WorkflowError, type CliCommand } from './command.js';
import { integerOption, parseArgs, optionString, UsageError, type ParsedArgs } from './args.js';
import { cliLimits } from '../limits.js';
import { exitCodeForError, exitCodes } from './exit-codes.js';
import { loadHostModule, withRuntime } from './host-module.js';
import { packageVersion } from '../version.js';
import { commandUsage, overviewUsage, usageTable } from './usage.js';
import { print, progress } from './output.js';

export { exitCodes };

let stdinTakenBy: string | undefined;

/** All of stdin, for the one option given as `-`. */
function readStdin(what: string): string {
  if (stdinTakenBy !== undefined) throw new UsageError(`${what} - cannot read stdin: ${stdinTakenBy} - already does`);
  stdinTakenBy = what;
  try {
    return readFileSync(0, 'utf8');
  } catch (err) {
    throw new WorkflowError('cli.bad-json', `${what} -: cannot read stdin: ${(err as Error).message}`);
  }
}

/** A JSON option: `-` reads stdin, an existing file is read, anything else is inline JSON. */
function readJsonArg(value: string, what: string): unknown {
  const fromStdin = value === '-';
  const text = fromStdin ? readStdin(what) : existsSync(value) ? readFileSync(value, 'utf8') : value;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new WorkflowError('cli.bad-json', fromStdin ? `${what} -: stdin is not valid JSON: ${(err as Error).message}` : `${what} is neither a readable file nor valid JSON: ${(err as Error).message}`);
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

const dependencyFilePattern = new RegExp(`^(${portableIdSource})@([1-9][0-9]{0,8})\\.json$`);

/** Fixed revisions of called workflows: `<id>@<revision>.json` files in `--deps` or the host module's `dependencies`. */
async function readDependencies(args: ParsedArgs): Promise<{ template: unknown; revision: number }[]> {
  const host = await loadHostModule(optionString(args, 'config'));
  const dir = optionString(args, 'deps') ?? (typeof host.dependencies === 'string' ? resolve(host.configDir ?? '.', host.dependencies) : undefined);
  if (!dir) return [];
  if (!existsSync(dir)) throw new WorkflowError('cli.not-found', `dependency folder ${dir} does not exist`);
  const out: { template: unknown; revision: number }[] = [];
  for (const name of readdirSync(dir).sort()) {
    const m = dependencyFilePattern.exec(name);
    if (m) out.push({ template: readTemplate(join(dir, name)), revision: Number(m[2]) });
  }
  return out;
}


/** The W3C trace context a launch joins: `--traceparent`, else the environment's `TRACEPARENT`. */
function traceparentOf(args: ParsedArgs): string | undefined {
  return optionString(args, 'traceparent') ?? (process.env.TRACEPARENT || undefined);
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


const commands: Record<string, CliCommand> = {
  validate: {
    flags: [],
    async run(args) {
      const [file] = need(args, 1, 'template file');
      return withRuntime(args, async (rt) => {
        const report = await rt.validate(readTemplate(file));
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
      const delivery = deliveryTargetFromArgs(args);
      return withRuntime(args, async (rt) => {
        // Only a target that ends in @<revision> may be a published one: the catalog verbs load then.
        const catalogVerbs = /@[0-9]+$/.test(file) ? await import('./commands/catalog.js') : undefined;
        const published = catalogVerbs && (await catalogVerbs.resolveRunTarget(file, rt));
        const traceparent = traceparentOf(args);
        if (catalogVerbs && published) return catalogVerbs.runPublished(rt, published, { input, wait: !args.options.has('no-wait'), ...(delivery ? { delivery } : {}), ...(traceparent ? { traceparent } : {}) });
        const template = readTemplate(file);
        const report = await rt.validate(template);
        if (!report.ok) {
          print('ValidationReport', { file, ...report });
          for (const e of report.errors) progress(`${file}: ${e.pointer || '/'}: ${e.code}: ${e.message}`);
          return exitCodes.invalid;
        }
        const started = Date.now();
        const noWait = args.options.has('no-wait');
        const handle = await rt.launch({ type: 'inline', template, dependencies: await readDependencies(args) }, { input, actor: 'cli', ...(noWait ? { executionMode: 'background' as const } : {}), ...(delivery ? { delivery } : {}), ...(traceparent ? { traceparent } : {}) });
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
    flags: ['follow'],
    async run(args) {
      const [runId] = need(args, 1, 'run id');
      const format = optionString(args, 'format') ?? 'jsonl';
      if (!['jsonl', 'json', 'text'].includes(format)) throw new UsageError('--format must be jsonl, json or text');
      const follow = args.options.has('follow');
      if (follow && format === 'json') throw new UsageError('--follow prints events as they commit: --format jsonl or text');
      return withRuntime(args, async (rt) => {
        const write = (e: any) => {
          if (format === 'jsonl') process.stdout.write(`${JSON.stringify(e)}\n`);
          else process.stdout.write(`${String(e.seq).padStart(6)} ${e.occurredAt} ${e.type.padEnd(24)} ${e.node ? `${e.node.id}${e.node.item !== undefined ? `[${e.node.item}]` : ''} #${e.node.attempt}` : ''}\n`);
        };
        if (follow) return followTrace(rt, runId, write);
        const all: unknown[] = [];
        for (let after = 0; ; ) {
          const page = await rt.readEvents(runId, { afterSeq: after, limit: 1000 });
          for (const e of page.events) {
            if (format === 'json') all.push(e);
            else write(e);
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
      const limit = integerOption(args, 'limit', { min: 1, max: cliLimits.runsListMax }) ?? cliLimits.runsListDefault;
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
        if (args.options.has('no-wait')) {
          // Only the request: the run's owner, or a worker when it has none, resumes it.
          const run = await rt.getRun(runId);
          if (isTerminalStatus(run.status)) {
            print('RunResult', { ...run });
            return exitFor(run.status);
          }
          const commandId = await rt.post(runId, { type: 'resume', by: 'cli' });
          const workers = (await rt.liveWorkers()).length;
          print('CommandQueued', { runId, commandId, command: 'resume', owner: run.owner ?? null, workers });
          if (!run.owner && workers === 0) progress(`run ${runId} has no owner and no worker is running on this store: start \`agent-workflow serve\` to resume it, or run \`resume\` without --no-wait`);
          return exitCodes.ok;
        }
        // A queued run has not started: there is nothing to resume in this process, and following
        // it would wait for a worker that may never come. Say so, with its own exit code.
        const current = await rt.getRun(runId);
        if (current.status === 'queued') return printQueued(rt, runId, exitCodes.queued);
        const handle = await rt.resume(runId, { by: 'cli' });
        const outcome = await handle.settled();
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
        const item = integerOption(args, 'item', { min: 0, max: cliLimits.wholeNumberMax });
        const attentionSeq = integerOption(args, 'attention-seq', { min: 1, max: cliLimits.wholeNumberMax });
        const applied = await rt.resolve(runId, nodeId, { by, ...(item !== undefined ? { item } : {}), ...(attentionSeq !== undefined ? { attentionSeq } : {}), ...(succeeded !== undefined ? { succeeded: readJsonArg(succeeded, '--succeeded') } : {}), ...(fail !== undefined ? { fail } : {}), ...(retry ? { retry: true } : {}) });
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
        const { parseExport, replayExport } = await import('../sdk/export.js');
        if (!existsSync(from)) throw new WorkflowError('cli.not-found', `export file ${from} does not exist`);
        let exported = parseExport(readJsonArg(from, '--from'));
        // Sealed artifacts open with this host's keys (ADW_ARTIFACT_KEYS); without them a
        // recorded replay that needs one says it is missing.
        const { sealedKeyIds, openExportArtifacts } = await import('../../core/export-format.js');
        if (sealedKeyIds(exported).length > 0) {
          const { artifactKeysFromEnv } = await import('../artifacts/codec.js');
          const keys = artifactKeysFromEnv();
          if (keys) exported = await openExportArtifacts(exported, (kid) => keys.get(kid));
        }
        let editedPlan;
        if (edited) {
          const { EngineInstance } = await import('../../core/engine-instance.js');
          const { nodeComponentLoader } = await import('../sdk/component.js');
          const { createScriptImports } = await import('../sdk/sandbox.js');
          const { sha256Hex } = await import('../../shared/digest.js');
          const scripts = await createScriptImports();
          const engine = await EngineInstance.create(nodeComponentLoader(), { load: () => undefined, ...scripts, sha256Hex, log: () => undefined });
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
    flags: ['insecure-no-auth', 'no-deliveries', 'mcp-allow-inline', 'mcp-allow-deliveries'],
    async run(args) {
      const { serve } = await import('./serve.js');
      return serve(args);
    },
  },
  mcp: {
    flags: ['allow-inline', 'allow-deliveries'],
    async run(args) {
      // stdout is the MCP channel from here on: progress goes to stderr only.
      const { serveMcp, parseMcpProfiles } = await import('../mcp/server.js');
      let profiles: ReturnType<typeof parseMcpProfiles>;
      try {
        profiles = parseMcpProfiles(optionString(args, 'profile'));
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      const principal = optionString(args, 'principal') ?? process.env.AGENT_WORKFLOW_MCP_PRINCIPAL ?? process.env.USER ?? 'mcp';
      const scopes = optionString(args, 'principal-scopes')?.split(',').map((s) => s.trim()).filter(Boolean);
      const secretRefs = optionString(args, 'delivery-secrets')?.split(',').map((s) => s.trim()).filter(Boolean);
      if (secretRefs !== undefined && !args.options.has('allow-deliveries')) throw new UsageError('--delivery-secrets names the secrets of --allow-deliveries, which is missing');
      const policy = {
        profiles,
        principal: { id: principal, ...(scopes !== undefined ? { scopes } : {}) },
        allowInline: args.options.has('allow-inline'),
        deliveries: { allow: args.options.has('allow-deliveries'), ...(secretRefs !== undefined ? { secretRefs } : {}) },
      };
      return withRuntime(args, async (rt) => {
        const server = await serveMcp(rt, undefined, policy);
        progress(`agent-workflow: MCP server on stdio (profiles: ${profiles.join(', ')}; principal: ${principal}${policy.allowInline ? '; inline templates allowed' : ''}${policy.deliveries.allow ? '; deliveries allowed' : ''})`);
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

/**
 * `trace --follow`: the run's events, then each commit as it becomes durable, until the run ends;
 * exits as `run` would for its end. A paused run may continue, so the trace waits through a pause
 * (until SIGINT or SIGTERM, which exit with the paused code).
 */
async function followTrace(rt: WorkflowRuntime, runId: string, write: (event: any) => void): Promise<number> {
  await rt.getRun(runId);
  const stop = new AbortController();
  let stoppedBy: string | undefined;
  const onSignal = (signal: string) => () => {
    stoppedBy = signal;
    stop.abort();
  };
  const onInt = onSignal('SIGINT');
  const onTerm = onSignal('SIGTERM');
  process.once('SIGINT', onInt);
  process.once('SIGTERM', onTerm);
  try {
    for await (const item of rt.live(runId, { signal: stop.signal })) if (item.kind === 'event') write(item.event);
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  }
  const run = await rt.getRun(runId);
  if (stoppedBy) progress(`agent-workflow trace: ${stoppedBy}: run ${runId} is ${run.status}`);
  return exitFor(run.status);
}

/** `--help` or `-h` among a command's arguments (before a `--`). */
function asksForHelp(argv: readonly string[]): boolean {
  for (const arg of argv) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

export async function main(argv: string[]): Promise<number> {
  for (const name of [...Object.keys(commands), ...extraCommandNames]) if (!usageTable[name]) throw new Error(`command ${name} has no entry in the usage table (usage.ts)`);
  const [name, ...rest] = argv;
  if (!name) {
    process.stderr.write(`${overviewUsage()}\n`);
    return exitCodes.usage;
  }
  if (name === '--help' || name === '-h' || (name === 'help' && rest.length === 0)) {
    process.stdout.write(`${overviewUsage()}\n`);
    return exitCodes.ok;
  }
  if (name === '--version' || name === '-V') {
    process.stdout.write(`${packageVersion}\n`);
    return exitCodes.ok;
  }
  if (name === 'help') {
    const text = commandUsage(asksForHelp(rest.slice(0, 1)) ? 'help' : rest[0]);
    if (text === undefined) {
      process.stderr.write(`agent-workflow: unknown command ${JSON.stringify(rest[0])}\n${overviewUsage()}\n`);
      return exitCodes.usage;
    }
    process.stdout.write(`${text}\n`);
    return exitCodes.ok;
  }
  const command = Object.prototype.hasOwnProperty.call(commands, name) ? commands[name] : await loadExtraCommand(name);
  if (!command) {
    process.stderr.write(`agent-workflow: unknown command ${JSON.stringify(name)}\n${overviewUsage()}\n`);
    return exitCodes.usage;
  }
  if (asksForHelp(rest)) {
    process.stdout.write(`${commandUsage(name)}\n`);
    return exitCodes.ok;
  }
  try {
    return await command.run(parseArgs(rest, command.flags));
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`agent-workflow: ${err.message}\n(agent-workflow ${name} --help for its usage)\n`);
      return exitCodes.usage;
    }
    const e = err as { code?: unknown; message?: string; detail?: unknown };
    const code = typeof e.code === 'string' ? e.code : 'cli.internal';
    const message = e.message ?? String(err);
    print('Error', { error: { code, message, ...(e.detail !== undefined ? { detail: e.detail } : {}) } });
    progress(`agent-workflow: ${code}: ${message}`);
    return exitCodeForError(code, message);
  }
}

/**
 * True when this file is the program node was started with (the bin, perhaps through npm's
 * symlink), false when another module imports it: importing the `./cli` export runs nothing.
 */
function startedAsProgram(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (startedAsProgram()) {
  // The product's own process: the lean memory settings, unless the environment picks others.
  preferLeanMemory();
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
}

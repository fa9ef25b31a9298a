// Catalog verbs of the CLI: draft put/get, publish, search, describe, diff, and the offline
// migrate-template converter; plus the `run <id>@<rev>` target for main.ts's `run`.
// better-sqlite3 is loaded only when a command opens the runtime (the router must not load it).
import { printQueued } from '../queued.js';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseRevisionRef } from '../../catalog/catalog.js';
import type { DeliveryTarget, LaunchTarget, WorkflowRuntime } from '../../runtime.js';
import { migrateTemplate } from '../../catalog/template-migration.js';
import { integerOption as integerOptionIn, optionString, UsageError, type ParsedArgs } from '../args.js';
import { cliLimits } from '../../limits.js';
import { CliError, type CliCommand } from '../command.js';
import { withRuntime } from '../host-module.js';
import { print, progress } from '../output.js';

const exit = { ok: 0, runFailed: 1, invalid: 3, paused: 4, cancelled: 5 } as const;

function readJsonFile(file: string): unknown {
  if (!existsSync(file)) throw new CliError('cli.not-found', `file ${file} does not exist`);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CliError('template.bad-json', `${file} is not valid JSON: ${(err as Error).message}`);
  }
}

function revisionArg(text: string | undefined): { id: string; revision: number } {
  const ref = text === undefined ? undefined : parseRevisionRef(text);
  if (!ref) throw new UsageError(`expected <id>@<revision> (e.g. invoice-triage@3), got ${JSON.stringify(text ?? '')}`);
  return ref;
}

function integerOption(args: ParsedArgs, name: string, required: boolean): number | undefined {
  const text = optionString(args, name);
  if (text === undefined) {
    if (required) throw new UsageError(`option --${name} <n> is required`);
    return undefined;
  }
  return integerOptionIn(args, name, { min: 0, max: cliLimits.wholeNumberMax });
}


const by = (args: ParsedArgs) => optionString(args, 'by') ?? process.env.USER ?? 'cli';

/** `run <id>@<rev>`: a published target, unless a file of that name exists. */
export async function resolveRunTarget(arg: string, runtime: WorkflowRuntime): Promise<LaunchTarget | undefined> {
  const ref = parseRevisionRef(arg);
  if (!ref) return undefined;
  if (existsSync(arg) && (await runtime.catalog.listRevisions(ref.id)).every((r) => r.revision !== ref.revision)) return undefined;
  return { type: 'published', id: ref.id, revision: ref.revision };
}

/** Launches a published target the way `run` does a file: RunAccepted / RunResult and its exit code. */
export async function runPublished(runtime: WorkflowRuntime, target: LaunchTarget, options: { input?: unknown; wait?: boolean; delivery?: DeliveryTarget; traceparent?: string } = {}): Promise<number> {
  const handle = await runtime.launch(target, { input: options.input ?? {}, actor: 'cli', ...(options.wait === false ? { executionMode: 'background' as const } : {}), ...(options.delivery ? { delivery: options.delivery } : {}), ...(options.traceparent ? { traceparent: options.traceparent } : {}) });
  if (options.wait === false) return printQueued(runtime, handle.runId);
  progress(`run ${handle.runId} accepted`);
  const outcome = await handle.settled();
  progress(`run ${handle.runId} ${outcome.status}${outcome.pausedReason ? ` (${outcome.pausedReason})` : ''}, ${outcome.seq} events`);
  print('RunResult', { ...outcome });
  return outcome.status === 'completed' ? exit.ok : outcome.status === 'failed' ? exit.runFailed : outcome.status === 'cancelled' ? exit.cancelled : outcome.status === 'paused' ? exit.paused : exit.ok;
}

export const catalogCommands: Record<string, CliCommand> = {
  draft: {
    flags: [],
    async run(args) {
      const [verb, target] = args.positional;
      if ((verb !== 'put' && verb !== 'get') || target === undefined) throw new UsageError('usage: agent-workflow draft put <file> [--expected <draft-revision>] | draft get <id>');
      if (verb === 'get') return withRuntime(args, async (rt) => (print('WorkflowDraft', { draft: await rt.catalog.getDraft(target) }), exit.ok));
      const template = readJsonFile(target);
      // Without --expected the draft must be new: overwriting needs the draft revision you read.
      const expected = integerOption(args, 'expected', false) ?? 0;
      return withRuntime(args, async (rt) => {
        const draft = await rt.catalog.putDraft(template, { expectedDraftRevision: expected, by: by(args) });
        progress(`draft ${draft.id} is at draft revision ${draft.draftRevision}`);
        print('WorkflowDraft', { draft: { id: draft.id, draftRevision: draft.draftRevision, lastRevision: draft.lastRevision, updatedAt: draft.updatedAt, updatedBy: draft.updatedBy } });
        return exit.ok;
      });
    },
  },
  publish: {
    flags: [],
    async run(args) {
      const [id] = args.positional;
      if (id === undefined) throw new UsageError('usage: agent-workflow publish <id> --expected <draft-revision>');
      const expected = integerOption(args, 'expected', true)!;
      return withRuntime(args, async (rt) => {
        try {
          const { template: _template, ...revision } = await rt.catalog.publish(id, { expectedDraftRevision: expected, by: by(args) });
          progress(revision.created ? `published ${id}@${revision.revision}` : `${id}@${revision.revision} already has this semantic hash; nothing new was published`);
          print('WorkflowRevision', { revision });
          return exit.ok;
        } catch (err) {
          const e = err as { code?: string; errors?: { code: string; pointer: string; message: string }[] };
          if (e.code !== 'catalog.publish-invalid') throw err;
          print('PublishRefused', { id, ok: false, errors: e.errors });
          for (const x of e.errors ?? []) progress(`${id}: ${x.pointer || '/'}: ${x.code}: ${x.message}`);
          return exit.invalid;
        }
      });
    },
  },
  search: {
    flags: [],
    async run(args) {
      const text = args.positional.join(' ');
      return withRuntime(args, async (rt) => (print('SearchResult', { text, hits: await rt.catalog.search(text) }), exit.ok));
    },
  },
  describe: {
    flags: [],
    async run(args) {
      const ref = revisionArg(args.positional[0]);
      const view = optionString(args, 'view') ?? 'schema';
      if (view !== 'schema' && view !== 'template' && view !== 'plan') throw new UsageError('--view must be schema, template or plan');
      return withRuntime(args, async (rt) => (print('WorkflowDescription', { view, ...(await rt.catalog.describe(ref.id, ref.revision, view)) }), exit.ok));
    },
  },
  diff: {
    flags: [],
    async run(args) {
      const a = revisionArg(args.positional[0]);
      const b = revisionArg(args.positional[1]);
      return withRuntime(args, async (rt) => {
        const diff = await rt.catalog.diff(a, b);
        for (const c of diff.changes) progress(`${c.op.padEnd(7)} ${c.pointer}`);
        print('SemanticDiff', { ...diff });
        return exit.ok;
      });
    },
  },
  'migrate-template': {
    flags: [],
    async run(args) {
      const [file] = args.positional;
      if (file === undefined) throw new UsageError('usage: agent-workflow migrate-template <legacy.json> [--out <file>]');
      const out = optionString(args, 'out');
      const migration = migrateTemplate(readJsonFile(file));
      for (const f of migration.unconverted) progress(`${file}: ${f.pointer || '/'}: ${f.code}: ${f.message}`);
      for (const f of migration.notes) progress(`${file}: ${f.pointer || '/'}: note: ${f.message}`);
      if (out) writeFileSync(out, `${JSON.stringify(migration.template, null, 2)}\n`);
      print('TemplateMigration', { file, ...(out ? { out } : { template: migration.template }), complete: migration.complete, unconverted: migration.unconverted, notes: migration.notes });
      return migration.complete ? exit.ok : exit.invalid;
    },
  },
};

// Trigger verbs of the CLI: `binding put|publish|list|describe|disable` and `ingress list`, and
// the trigger pipeline `serve` runs (its deployment, and fault injection for crash tests).
// better-sqlite3 is loaded only when a command opens the runtime (the router must not load it).
import { existsSync, readFileSync } from 'node:fs';
import type { BindingSource, BindingState } from '../../triggers/bindings.js';
import type { TriggerPipeline } from '../../triggers/ingress.js';
import { parseRevisionRef } from '../../catalog/catalog.js';
import { cliLimits, triggerLimits } from '../../limits.js';
import type { WorkflowRuntime } from '../../runtime.js';
import type { IngressStatus } from '../../stores/trigger-storage.js';
import { integerOption, optionString, UsageError, type ParsedArgs } from '../args.js';
import { CliError, type CliCommand } from '../command.js';
import { withRuntime } from '../host-module.js';
import { print, progress } from '../output.js';

/** The deployment a process serves (part of every dedupe key): `--deployment`, else the environment. */
export const deploymentEnvVar = 'AGENT_WORKFLOW_DEPLOYMENT';


const by = (args: ParsedArgs) => optionString(args, 'by') ?? process.env.USER ?? 'cli';

/** `<id>` or `<id>@<revision>`. */
function bindingRef(text: string | undefined, what: string): { id: string; revision?: number } {
  if (text === undefined) throw new UsageError(`${what}: expected <binding-id>[@<revision>]`);
  if (text.includes('@')) {
    const ref = parseRevisionRef(text);
    if (!ref) throw new UsageError(`${what}: expected <binding-id>@<revision>, got ${JSON.stringify(text)}`);
    return ref;
  }
  return { id: text };
}

export async function triggerPipeline(rt: WorkflowRuntime, args: ParsedArgs, log: (level: string, message: string) => void): Promise<TriggerPipeline> {
  const { TriggerPipeline } = await import('../../triggers/ingress.js');
  const deployment = optionString(args, 'deployment') ?? process.env[deploymentEnvVar] ?? 'default';
  return new TriggerPipeline(rt, { deployment, log });
}

const bindingUsage = 'usage: agent-workflow binding put <file> [--expected <revision>] | publish <id>@<rev> | list [--source s] [--state s] | describe <id>[@<rev>] | disable <id>[@<rev>]';

export const triggerCommands: Record<string, CliCommand> = {
  binding: {
    flags: [],
    async run(args) {
      const [verb, target] = args.positional;
      switch (verb) {
        case 'put': {
          if (target === undefined) throw new UsageError(bindingUsage);
          if (!existsSync(target)) throw new CliError('cli.not-found', `file ${target} does not exist`);
          let spec: unknown;
          try {
            spec = JSON.parse(readFileSync(target, 'utf8'));
          } catch (err) {
            throw new CliError('cli.bad-json', `${target} is not valid JSON: ${(err as Error).message}`);
          }
          const expected = integerOption(args, 'expected', { min: 0, max: cliLimits.wholeNumberMax });
          return withRuntime(args, async (rt) => {
            const binding = await rt.bindings.put(spec, { by: by(args), ...(expected !== undefined ? { expectedRevision: expected } : {}) });
            progress(`binding ${binding.id}@${binding.revision} stored as a draft; publish it with: agent-workflow binding publish ${binding.id}@${binding.revision}`);
            print('WorkflowBinding', { binding });
            return 0;
          });
        }
        case 'publish': {
          const ref = bindingRef(target, 'binding publish');
          if (ref.revision === undefined) throw new UsageError('binding publish: expected <binding-id>@<revision>');
          return withRuntime(args, async (rt) => {
            const binding = await rt.bindings.publish(ref.id, ref.revision!, { by: by(args) });
            progress(`binding ${binding.id}@${binding.revision} is published`);
            print('WorkflowBinding', { binding });
            return 0;
          });
        }
        case 'list': {
          const source = optionString(args, 'source') as BindingSource | undefined;
          const state = optionString(args, 'state') as BindingState | undefined;
          if (source !== undefined && !['webhook', 'dingtalk', 'cron'].includes(source)) throw new UsageError('--source is webhook, dingtalk or cron');
          if (state !== undefined && !['draft', 'published', 'disabled'].includes(state)) throw new UsageError('--state is draft, published or disabled');
          return withRuntime(args, async (rt) => {
            const bindings = await rt.bindings.list({ ...(source ? { source } : {}), ...(state ? { state } : {}) });
            print('BindingList', { bindings: bindings.map((b) => ({ id: b.id, revision: b.revision, source: b.source, state: b.state, target: `${b.target.id}@${b.target.revision}` })) });
            return 0;
          });
        }
        case 'describe': {
          const ref = bindingRef(target, 'binding describe');
          return withRuntime(args, async (rt) => {
            const binding = await rt.bindings.get(ref.id, ref.revision);
            let active: number | undefined;
            try {
              active = (await rt.bindings.active(ref.id)).revision;
            } catch {
              active = undefined;
            }
            print('WorkflowBinding', { binding, activeRevision: active ?? null });
            return 0;
          });
        }
        case 'disable': {
          const ref = bindingRef(target, 'binding disable');
          return withRuntime(args, async (rt) => {
            const bindings = await rt.bindings.disable(ref.id, ref.revision, { by: by(args) });
            progress(`binding ${ref.id}${ref.revision !== undefined ? `@${ref.revision}` : ''} is disabled`);
            print('BindingList', { bindings: bindings.map((b) => ({ id: b.id, revision: b.revision, source: b.source, state: b.state, target: `${b.target.id}@${b.target.revision}` })) });
            return 0;
          });
        }
        default:
          throw new UsageError(bindingUsage);
      }
    },
  },
  ingress: {
    flags: [],
    async run(args) {
      if (args.positional[0] !== 'list') throw new UsageError('usage: agent-workflow ingress list [--binding <id>] [--status <s>] [--run <run-id>] [--after <id>] [--limit N]');
      const status = optionString(args, 'status') as IngressStatus | undefined;
      if (status !== undefined && !['received', 'rejected', 'deduplicated', 'launched', 'missed'].includes(status)) throw new UsageError('--status is received, rejected, deduplicated, launched or missed');
      const limit = integerOption(args, 'limit', { min: 1, max: triggerLimits.ingressListMax }) ?? triggerLimits.ingressListDefault;
      const after = integerOption(args, 'after', { min: 0, max: cliLimits.wholeNumberMax });
      const bindingId = optionString(args, 'binding');
      const runId = optionString(args, 'run');
      return withRuntime(args, async (rt) => {
        const records = await rt.triggerStorage.listIngress({ limit, ...(bindingId ? { bindingId } : {}), ...(status ? { status } : {}), ...(runId ? { runId } : {}), ...(after !== undefined ? { afterId: after } : {}) });
        print('IngressList', { records });
        return 0;
      });
    },
  },
};

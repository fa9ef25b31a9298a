// Result delivery in the CLI: `deliveries list|retry|drain`, the `--deliver-to` option of `run`,
// and the `--delivery-*` options every command that opens a runtime takes (`serve` sends).
import { resolve } from 'node:path';
import type { DeliveryOptions, DeliveryTarget, WorkflowRuntime } from '../../runtime.js';
import { deliveryTargetFromFlag } from '../../delivery-target.js';
import { integerOption, optionString, UsageError, type ParsedArgs } from '../args.js';
import { cliLimits } from '../../limits.js';
import type { CliCommand } from '../command.js';
import { loadHostModule } from '../host-module.js';

const cliApiVersion = 'agent-workflow.cli/v1';
const states = ['pending', 'delivered', 'dead'] as const;

function print(kind: string, body: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ apiVersion: cliApiVersion, kind, ...body })}\n`);
}

function wholeNumber(args: ParsedArgs, name: string): number | undefined {
  const max = name === 'limit' ? cliLimits.deliveriesListMax : name === 'delivery-attempts' ? cliLimits.deliveryAttemptsMax : cliLimits.durationMsMax;
  return integerOption(args, name, { min: 1, max });
}

/** `--delivery-attempts`, `--delivery-backoff-ms`, `--delivery-timeout-ms`, `--delivery-lease-ms`, over the host module's `delivery`. */
export function deliveryOptionsFromArgs(args: ParsedArgs, host: { delivery?: DeliveryOptions }): DeliveryOptions | undefined {
  const fromArgs: DeliveryOptions = {};
  const set = (name: string, key: keyof Omit<DeliveryOptions, 'env'>) => {
    const n = wholeNumber(args, name);
    if (n !== undefined) fromArgs[key] = n;
  };
  set('delivery-attempts', 'maxAttempts');
  set('delivery-backoff-ms', 'backoffBaseMs');
  set('delivery-timeout-ms', 'sendTimeoutMs');
  set('delivery-lease-ms', 'leaseTtlMs');
  if (Object.keys(fromArgs).length === 0) return host.delivery;
  return { ...host.delivery, ...fromArgs };
}

/** `--deliver-to <webhook:url | dingtalk:url | url>` with `--deliver-secret-env NAME`, as a launch's `delivery`. */
export function deliveryTargetFromArgs(args: ParsedArgs): DeliveryTarget | undefined {
  const spec = optionString(args, 'deliver-to');
  const secretRef = optionString(args, 'deliver-secret-env');
  if (spec === undefined) {
    if (secretRef !== undefined) throw new UsageError('--deliver-secret-env names the secret of --deliver-to, which is missing');
    return undefined;
  }
  return deliveryTargetFromFlag(spec, secretRef);
}

async function withRuntime<T>(args: ParsedArgs, fn: (rt: WorkflowRuntime) => Promise<T>): Promise<T> {
  const host = await loadHostModule(optionString(args, 'config'));
  const dir = optionString(args, 'dir') ?? (host.dir ? resolve(host.configDir ?? '.', host.dir) : undefined);
  const { WorkflowRuntime } = await import('../../runtime.js');
  const store = optionString(args, 'store') ?? process.env.AGENT_WORKFLOW_STORE ?? (typeof host.store === 'string' ? host.store : undefined);
  const delivery = deliveryOptionsFromArgs(args, host as { delivery?: DeliveryOptions });
  const rt = await WorkflowRuntime.open({ ...host, ...(dir ? { dir } : {}), ...(store ? { store } : {}), ...(delivery ? { delivery } : {}) });
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

export const deliveriesCommands: Record<string, CliCommand> = {
  deliveries: {
    flags: [],
    async run(args) {
      const [verb, id] = args.positional;
      if (verb === 'list') {
        const status = optionString(args, 'status');
        if (status !== undefined && !(states as readonly string[]).includes(status)) throw new UsageError(`--status must be one of ${states.join(', ')}`);
        const runId = optionString(args, 'run');
        const limit = wholeNumber(args, 'limit');
        return withRuntime(args, async (rt) => {
          const deliveries = await rt.deliveries.list({ ...(status ? { state: status as (typeof states)[number] } : {}), ...(runId ? { runId } : {}), ...(limit ? { limit } : {}) });
          print('DeliveryList', { deliveries });
          return 0;
        });
      }
      if (verb === 'retry') {
        if (id === undefined) throw new UsageError('usage: agent-workflow deliveries retry <delivery-id>');
        return withRuntime(args, async (rt) => {
          print('DeliveryRetried', { delivery: await rt.deliveries.retry(id) });
          return 0;
        });
      }
      if (verb === 'drain') {
        return withRuntime(args, async (rt) => {
          print('DeliveriesDrained', { ...(await rt.deliveries.drain()) });
          return 0;
        });
      }
      throw new UsageError('usage: agent-workflow deliveries list [--status pending|delivered|dead] [--run <run-id>] [--limit N] | deliveries retry <delivery-id> | deliveries drain');
    },
  },
};

// Loads the embedding application's host module (`--config`, default ./agent-workflow.config.mjs):
// its tools, agents, approval handler, authorities and store location.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DeliveryOptions, RuntimeOptions, WorkflowRuntime } from '../runtime.js';
import { optionString, UsageError, type ParsedArgs } from './args.js';
import { deliveryOptionsFromArgs } from './delivery-args.js';

export interface HostModule extends RuntimeOptions {
  /** Where the config file lives; a relative `dir` is resolved against it. */
  configDir?: string;
  /** Folder of `<id>@<revision>.json` templates that `workflow.call@1` nodes may call. */
  dependencies?: string;
}

export async function loadHostModule(configPath: string | undefined): Promise<HostModule> {
  const explicit = configPath !== undefined;
  const file = resolve(configPath ?? 'agent-workflow.config.mjs');
  if (!existsSync(file)) {
    if (explicit) throw new UsageError(`host module ${file} does not exist`);
    return {};
  }
  const mod = await import(pathToFileURL(file).href);
  const config = (mod.default ?? mod) as HostModule;
  if (config === null || typeof config !== 'object') throw new UsageError(`host module ${file} must export an object (default export or named exports)`);
  return { ...config, configDir: dirname(file) };
}

/**
 * The runtime a command works on: the host module's options, then `--dir`, `--store` (or
 * AGENT_WORKFLOW_STORE), the delivery options and `--otlp` (or OTEL_EXPORTER_OTLP_ENDPOINT).
 */
/** The store a command names: `--dir`, `--store` (or AGENT_WORKFLOW_STORE), else the host module's. */
function storeOptionsOf(args: ParsedArgs, host: HostModule): { dir?: string; store?: string } {
  const dir = optionString(args, 'dir') ?? (host.dir ? resolve(host.configDir ?? '.', host.dir) : undefined);
  const store = optionString(args, 'store') ?? process.env.AGENT_WORKFLOW_STORE ?? (typeof host.store === 'string' ? host.store : undefined);
  return { ...(dir ? { dir } : {}), ...(store ? { store } : {}) };
}

export async function openRuntime(args: ParsedArgs): Promise<WorkflowRuntime> {
  const host = await loadHostModule(optionString(args, 'config'));
  // Loaded on demand: the router's commands must not load better-sqlite3.
  const { WorkflowRuntime } = await import('../runtime.js');
  const delivery = deliveryOptionsFromArgs(args, host as { delivery?: DeliveryOptions });
  // Spans of the runs this process commits go to a collector when one is named (see docs/observability.md).
  const otlpUrl = optionString(args, 'otlp') ?? (process.env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined);
  return WorkflowRuntime.open({ ...host, ...storeOptionsOf(args, host), ...(delivery ? { delivery } : {}), ...(otlpUrl ? { telemetry: { ...(host as { telemetry?: object }).telemetry, otlpUrl } } : {}) });
}

/** Where the command's store is, as `openRuntime` would open it: a PostgreSQL URL or a SQLite file. */
export async function storeLocationOf(args: ParsedArgs): Promise<string> {
  const { storeLocation } = await import('../stores/location.js');
  return storeLocation(storeOptionsOf(args, await loadHostModule(optionString(args, 'config'))));
}

/** Runs `fn` on the command's runtime and closes it, whatever `fn` does. */
export async function withRuntime<T>(args: ParsedArgs, fn: (rt: WorkflowRuntime) => Promise<T> | T): Promise<T> {
  const rt = await openRuntime(args);
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

// Loads the embedding application's host module (`--config`, default ./agent-workflow.config.mjs):
// its tools, agents, approval handler, authorities and store location.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RuntimeOptions } from '../runtime.js';
import { UsageError } from './args.js';

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

// Loads the transpiled engine component from dist/component/ in a Node process (the Node host and
// the router host: same binary, same V8 flags). It imports nothing but Node built-ins. Compiled
// core modules are cached per process, so a second instance (after a trap, or for replay) costs
// only instantiation.
//
// Memory: V8's optimizing wasm tier (TurboFan) recompiles the hot functions of the guest (the
// QuickJS interpreter loop above all) after a few thousand engine calls; its compiler zones and
// the second copy of the code add 20–40 MB of resident memory that the process keeps. The host
// therefore compiles the engine with Liftoff only (`--liftoff-only`, set before the first
// module is compiled; it applies to the whole process). `AGENT_WORKFLOW_WASM_TIER=optimizing`
// keeps V8's default dynamic tiering instead (see docs/hosts.md, "Memory").
import { readFile } from 'node:fs/promises';
import { setFlagsFromString } from 'node:v8';
import type { ComponentLoader } from '../core/engine-instance.js';
import { CodedError } from '../../engine/protocol/coded-error.js';

// The QuickJS back-end uses the wasm extended-const proposal, which Node 20 ships behind a flag.
// It must be set before the first module is compiled.
setFlagsFromString('--experimental-wasm-extended-const');

/** The environment variable that picks the wasm tier of the engine: `baseline` (default) or `optimizing`. */
export const wasmTierEnv = 'AGENT_WORKFLOW_WASM_TIER';

export type WasmTier = 'baseline' | 'optimizing';

/** The tier `AGENT_WORKFLOW_WASM_TIER` asks for; an unknown value is a typed error. */
export function wasmTierOf(env: NodeJS.ProcessEnv = process.env): WasmTier {
  const value = env[wasmTierEnv];
  if (value === undefined || value === '' || value === 'baseline') return 'baseline';
  if (value === 'optimizing') return 'optimizing';
  throw new CodedError('host.bad-option', `${wasmTierEnv} must be "baseline" or "optimizing", not ${JSON.stringify(value)}`);
}

/** The V8 flags set before the engine's first module is compiled, for a tier. */
export function wasmTierFlags(tier: WasmTier): string[] {
  return tier === 'baseline' ? ['--liftoff-only'] : [];
}

let tierApplied: WasmTier | undefined;

/** Sets the tier's flags once per process, before the first engine module is compiled. */
function applyWasmTier(): void {
  if (tierApplied !== undefined) return;
  const tier = wasmTierOf();
  for (const flag of wasmTierFlags(tier)) setFlagsFromString(flag);
  tierApplied = tier;
}

/** The tier the engine of this process was compiled with (undefined before the first compile). */
export function appliedWasmTier(): WasmTier | undefined {
  return tierApplied;
}

const componentDir = new URL('../../component/', import.meta.url);
const modules = new Map<string, Promise<WebAssembly.Module>>();

export function nodeComponentLoader(): ComponentLoader {
  return {
    async instantiate(getCoreModule, imports) {
      const { instantiate } = await import(new URL('engine.js', componentDir).href);
      return instantiate(getCoreModule, imports);
    },
    getCoreModule(path) {
      let m = modules.get(path);
      if (!m) {
        applyWasmTier();
        m = readFile(new URL(path, componentDir)).then((bytes) => WebAssembly.compile(bytes));
        modules.set(path, m);
      }
      return m;
    },
  };
}

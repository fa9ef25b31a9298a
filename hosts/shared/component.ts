// Loads the transpiled engine component from dist/component/ in a Node process (the Node host and
// the router host: same binary, same V8 flags). It imports nothing but Node built-ins. Compiled
// core modules are cached per process, so a second instance (after a trap, or for replay) costs
// only instantiation.
//
// Memory: V8's optimizing wasm tier (TurboFan) recompiles the hot functions of the guest (the
// QuickJS interpreter loop above all) after a few hundred engine calls; its compiler memory and
// the second copy of the code add 10–25 MB of resident memory that the process keeps (measured
// with bench/memory/rss.mjs). Compiling with Liftoff only (`--liftoff-only`) saves that at 10–25 %
// more CPU on long runs. V8 also grows the young generation up to 2 × 16 MiB under the allocation
// rate of a long run (~20 MB of the peak); `--semi-space-growth-factor=1` keeps it at its initial
// size. Both flags are process-wide: they would also slow every other wasm module and change the
// garbage collection of the application that embeds the SDK. So an embedding process keeps V8's
// defaults unless it asks (`AGENT_WORKFLOW_WASM_TIER=baseline`, `AGENT_WORKFLOW_YOUNG_GEN=fixed`),
// and the `agent-workflow` processes (serve, run, ...), which are the product's own, ask for both.
// A process started with its own semi-space flag is left alone. See docs/hosts.md, "Memory of the
// Node host".
import { readFile, readdir } from 'node:fs/promises';
import { setFlagsFromString } from 'node:v8';
import type { ComponentLoader } from '../core/engine-instance.js';
import { CodedError } from '../../engine/protocol/coded-error.js';
import { withLoopAlive } from './loop-alive.js';

// The QuickJS back-end uses the wasm extended-const proposal, which Node 20 ships behind a flag.
// It must be set before the first module is compiled.
setFlagsFromString('--experimental-wasm-extended-const');

/** The environment variable that picks the wasm tier of the engine: `baseline` or `optimizing` (V8's default). */
export const wasmTierEnv = 'AGENT_WORKFLOW_WASM_TIER';

export type WasmTier = 'baseline' | 'optimizing';

/** The tier `AGENT_WORKFLOW_WASM_TIER` asks for; an unknown value is a typed error. */
export function wasmTierOf(env: NodeJS.ProcessEnv = process.env): WasmTier {
  const value = env[wasmTierEnv];
  if (value === undefined || value === '' || value === 'optimizing') return 'optimizing';
  if (value === 'baseline') return 'baseline';
  throw new CodedError('host.bad-option', `${wasmTierEnv} must be "baseline" or "optimizing", not ${JSON.stringify(value)}`);
}

/** The V8 flags set before the engine's first module is compiled, for a tier. */
export function wasmTierFlags(tier: WasmTier): string[] {
  return tier === 'baseline' ? ['--liftoff-only'] : [];
}

/** The environment variable that picks the young generation's policy: `fixed` or `grow` (V8's default). */
export const youngGenEnv = 'AGENT_WORKFLOW_YOUNG_GEN';

export type YoungGen = 'fixed' | 'grow';

/** The policy `AGENT_WORKFLOW_YOUNG_GEN` asks for; an unknown value is a typed error. */
export function youngGenOf(env: NodeJS.ProcessEnv = process.env): YoungGen {
  const value = env[youngGenEnv];
  if (value === undefined || value === '' || value === 'grow') return 'grow';
  if (value === 'fixed') return 'fixed';
  throw new CodedError('host.bad-option', `${youngGenEnv} must be "fixed" or "grow", not ${JSON.stringify(value)}`);
}

/** Whether the process was started with its own young-generation size (then the host leaves it). */
export function youngGenSetByProcess(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): boolean {
  return [...execArgv, ...nodeOptions.split(/\s+/)].some((a) => /^--(max-semi-space-size|semi-space-growth-factor|max_semi_space_size|semi_space_growth_factor)(=|$)/.test(a));
}

let tierApplied: WasmTier | undefined;
let youngGenApplied: YoungGen | 'process' | undefined;

/** Sets the memory flags once per process, before the first engine module is compiled. */
function applyMemoryFlags(): void {
  if (tierApplied !== undefined) return;
  const tier = wasmTierOf();
  const young = youngGenOf();
  for (const flag of wasmTierFlags(tier)) setFlagsFromString(flag);
  if (youngGenSetByProcess()) youngGenApplied = 'process';
  else {
    if (young === 'fixed') setFlagsFromString('--semi-space-growth-factor=1');
    youngGenApplied = young;
  }
  tierApplied = tier;
}

/** The young-generation policy in force (`process`: the process's own flags), undefined before the first compile. */
export function appliedYoungGen(): YoungGen | 'process' | undefined {
  return youngGenApplied;
}

/** The tier the engine of this process was compiled with (undefined before the first compile). */
export function appliedWasmTier(): WasmTier | undefined {
  return tierApplied;
}

const componentDir = new URL('../../component/', import.meta.url);
const modules = new Map<string, Promise<WebAssembly.Module>>();

/** Reads and compiles one core module of the component, once per process. */
function coreModule(path: string): Promise<WebAssembly.Module> {
  let m = modules.get(path);
  if (!m) {
    applyMemoryFlags();
    m = readFile(new URL(path, componentDir)).then((bytes) => WebAssembly.compile(bytes));
    // A module compiled ahead and never asked for (see below) must not be an unhandled rejection;
    // whoever asks for it gets the error from the promise itself.
    m.catch(() => undefined);
    modules.set(path, m);
  }
  return m;
}

/**
 * Starts reading and compiling every core module of the component. V8 compiles on background
 * threads, so this runs beside what the main thread does meanwhile: parsing the bindings, opening
 * the store (bench/cold/README.md). The bindings ask for the modules they need by name.
 */
async function compileAhead(): Promise<void> {
  if (modules.size > 0) return;
  const names = await readdir(componentDir);
  for (const name of names) if (name.endsWith('.wasm')) void coreModule(name);
}

/**
 * Starts compiling the engine's core modules now: at every instantiation, beside the import of the
 * bindings, and earlier for a host that has other work to do before it creates its engine
 * instance (the router reads its journal and loads QuickJS first). A failure here is not
 * reported: the instantiation asks for the module again and gets it.
 */
export function compileComponentAhead(): void {
  compileAhead().catch(() => undefined);
}

export function nodeComponentLoader(): ComponentLoader {
  return {
    async instantiate(getCoreModule, imports) {
      // The core modules compile while the bindings load; `instantiate` awaits them (`getCoreModule`).
      return withLoopAlive(async () => {
        compileComponentAhead();
        const { instantiate } = await import(new URL('engine.js', componentDir).href);
        return instantiate(getCoreModule, imports);
      });
    },
    getCoreModule: coreModule,
  };
}

/**
 * The memory settings of the product's own processes (`agent-workflow …`): Liftoff only and a
 * fixed young generation, unless the environment already says otherwise.
 */
export function preferLeanMemory(env: NodeJS.ProcessEnv = process.env): void {
  if (env[wasmTierEnv] === undefined || env[wasmTierEnv] === '') env[wasmTierEnv] = 'baseline';
  if (env[youngGenEnv] === undefined || env[youngGenEnv] === '') env[youngGenEnv] = 'fixed';
}

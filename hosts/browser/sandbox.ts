// The browser's answer to the `sandbox` import: the same QuickJS evaluator as the Node host, over
// the same quickjs-emscripten RELEASE_SYNC wasm binary (copied next to the page as quickjs.wasm).
// Only where the bytes come from differs; the evaluator adds its own bounded memory, so limits
// and verdicts are those of every other host.
import { RELEASE_SYNC, type QuickJSSyncVariant } from 'quickjs-emscripten';
import { ScriptEvaluator } from '../../sandbox/index.js';
import type { EngineHostImports } from '../core/engine-instance.js';
import type { WasmSource } from './component.js';

export type ScriptImports = Pick<EngineHostImports, 'evaluateScript' | 'checkScriptSyntax'>;

/** File name of the QuickJS binary in the page's wasm folder. */
export const quickjsWasmName = 'quickjs.wasm';

const compiled = new WeakMap<WasmSource, Promise<WebAssembly.Module>>();

/** The QuickJS module compiled once per source; each evaluator instantiates it afresh. */
function quickjsModule(source: WasmSource): Promise<WebAssembly.Module> {
  let m = compiled.get(source);
  if (!m) {
    m = source.bytes(quickjsWasmName).then((bytes) => WebAssembly.compile(bytes));
    compiled.set(source, m);
  }
  return m;
}

/**
 * RELEASE_SYNC with its wasm module supplied. Not built with `newVariant`: a variant made by
 * `newVariant` ignores the options of a second `newVariant` wrapped around it, and the
 * evaluator wraps the variant it gets to bound the wasm memory.
 */
export function quickjsVariant(source: WasmSource): QuickJSSyncVariant {
  return {
    type: 'sync',
    importFFI: RELEASE_SYNC.importFFI,
    async importModuleLoader() {
      const load = (await RELEASE_SYNC.importModuleLoader()) as unknown as (options: Record<string, unknown>) => Promise<unknown>;
      const module = await quickjsModule(source);
      const instantiateWasm = (imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance, module: WebAssembly.Module) => void) => {
        void WebAssembly.instantiate(module, imports).then((instance) => done(instance, module));
        return {};
      };
      // locateFile: the module computes a wasm URL before it asks for the instance.
      const withModule = (options: Record<string, unknown> = {}) => load({ ...options, instantiateWasm, locateFile: (name: string) => name });
      return withModule as unknown as Awaited<ReturnType<QuickJSSyncVariant['importModuleLoader']>>;
    },
  };
}

export async function createScriptImports(source: WasmSource): Promise<ScriptImports & { evaluator: ScriptEvaluator }> {
  const evaluator = await ScriptEvaluator.create({ loadVariant: () => quickjsVariant(source) });
  return {
    evaluator,
    evaluateScript: (script, inputJson, limits) => evaluator.evaluate(script, inputJson, limits),
    checkScriptSyntax: (script) => evaluator.checkSyntax(script),
  };
}

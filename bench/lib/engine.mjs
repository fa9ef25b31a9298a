// One EngineInstance of a transpiled component directory, with an in-memory host that answers
// nothing (no journal, no scripts) and the Node host's SHA-256: what the engine-only benchmarks drive.
import { readFile } from 'node:fs/promises';

const root = new URL('../../', import.meta.url);

export { twoStepTemplate } from './templates.mjs';

/** `dir`: a URL of a directory holding engine.js and its core modules (default dist/component/). */
export async function benchEngine(dir = new URL('dist/component/', root)) {
  const { EngineInstance } = await import(new URL('dist/hosts/core/engine-instance.js', root).href);
  const { sha256Hex } = await import(new URL('dist/hosts/shared/digest.js', root).href);
  const loader = {
    instantiate: async (getCoreModule, imports) => (await import(new URL('engine.js', dir).href)).instantiate(getCoreModule, imports),
    getCoreModule: async (p) => WebAssembly.compile(await readFile(new URL(p, dir))),
  };
  return EngineInstance.create(loader, {
    load: () => undefined,
    evaluateScript: () => ({ ok: false, error: { code: 'script.unavailable', message: 'not measured' } }),
    checkScriptSyntax: () => undefined,
    sha256Hex,
    log: () => undefined,
  });
}

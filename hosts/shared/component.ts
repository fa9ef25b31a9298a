// Loads the transpiled engine component from dist/component/ in a Node process (the Node host and
// the router host: same binary, same V8 flag). It imports nothing but Node built-ins. Compiled
// core modules are cached per process, so a second instance (after a trap, or for replay) costs
// only instantiation.
import { readFile } from 'node:fs/promises';
import { setFlagsFromString } from 'node:v8';
import type { ComponentLoader } from '../core/engine-instance.js';

// The QuickJS back-end uses the wasm extended-const proposal, which Node 20 ships behind a flag.
// It must be set before the first module is compiled.
setFlagsFromString('--experimental-wasm-extended-const');

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
        m = readFile(new URL(path, componentDir)).then((bytes) => WebAssembly.compile(bytes));
        modules.set(path, m);
      }
      return m;
    },
  };
}

// Loads the transpiled engine component in a browser. The core modules are the same
// engine.core*.wasm files the Node host compiles; they come from a `WasmSource`: fetched next to
// the page over http(s), or decoded from an inline table when the page is opened from file://
// (Chromium refuses fetch() of file:// URLs). Chromium ships the wasm extended-const proposal, so
// no flag is needed here (Node needs one: see hosts/node/sdk/component.ts).
// dist/hosts/browser/component.js -> dist/component/engine.js; the page bundle resolves the same
// file (see build-page.mjs).
// @ts-ignore: jco output, present under dist/ only
import { instantiate as instantiateEngine } from '../../component/engine.js';
import type { ComponentLoader } from '../core/engine-instance.js';
import { CodedError } from '../../engine/protocol/coded-error.js';

/** Where the page's wasm binaries come from, by file name (`engine.core.wasm`, `quickjs.wasm`). */
export interface WasmSource {
  bytes(name: string): Promise<Uint8Array<ArrayBuffer>>;
}

/** The global a classic script (wasm-inline.js) sets when the page runs from file://. */
export const inlineWasmGlobal = '__agentWorkflowWasm';

export class WasmLoadError extends CodedError {
  constructor(message: string) {
    super('browser.wasm-missing', message);
    this.name = 'WasmLoadError';
  }
}

/** Fetches `<base><name>`; same origin only, no credentials leave the page. */
export function fetchWasmSource(base: string | URL): WasmSource {
  return {
    async bytes(name) {
      const url = new URL(name, base);
      const response = await fetch(url, { credentials: 'same-origin' });
      if (!response.ok) throw new WasmLoadError(`${url.href}: HTTP ${response.status}`);
      return new Uint8Array(await response.arrayBuffer());
    },
  };
}

/** Decodes base64 entries of a table built by build-page.mjs. */
export function inlineWasmSource(table: Record<string, string>): WasmSource {
  return {
    async bytes(name) {
      const text = table[name];
      if (typeof text !== 'string') throw new WasmLoadError(`${name} is not in the inline wasm table`);
      const binary = atob(text);
      const out = new Uint8Array(binary.length);
      for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
      return out;
    },
  };
}

/** The page's default: the inline table when a script defined it, else files next to the page. */
export function defaultWasmSource(base: string | URL): WasmSource {
  const table = (globalThis as Record<string, unknown>)[inlineWasmGlobal];
  return table && typeof table === 'object' ? inlineWasmSource(table as Record<string, string>) : fetchWasmSource(base);
}

/** A component loader over a wasm source; compiled modules are cached per loader. */
export function browserComponentLoader(source: WasmSource): ComponentLoader {
  const modules = new Map<string, Promise<WebAssembly.Module>>();
  return {
    async instantiate(getCoreModule, imports) {
      return instantiateEngine(getCoreModule, imports);
    },
    getCoreModule(path) {
      let m = modules.get(path);
      if (!m) {
        m = source.bytes(path).then((bytes) => WebAssembly.compile(bytes));
        modules.set(path, m);
      }
      return m;
    },
  };
}

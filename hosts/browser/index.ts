// `@gm-hz/agent-dag-workflow/browser`: recorded replay and inspection of a run export in a web
// page, with the same engine component and the same QuickJS binary as the Node host. No store, no
// gateway: the imported journal is the only input.
//
// Call order: `BrowserReplayHost.create()` once (compiles the wasm modules), then any number of
// `replay()`; each replay gets a fresh engine instance and a fresh script evaluator, exactly as
// the Node host's `replayExport` does, so the reports are the same bytes.
import { EngineInstance } from '../core/engine-instance.js';
import type { ExecutionPlan, HostLog } from '../core/types.js';
import { browserComponentLoader, defaultWasmSource, type WasmSource } from './component.js';
import { consoleLog } from './log.js';
import { createScriptImports } from './sandbox.js';
import type { ComponentLoader } from '../core/engine-instance.js';
import { artifactTexts } from '../core/export-format.js';
import type { RunExport } from './journal.js';

export { parseExport, parseExportText, ExportError, exportFormat, type RunExport } from './journal.js';
export { browserComponentLoader, fetchWasmSource, inlineWasmSource, defaultWasmSource, inlineWasmGlobal, WasmLoadError, type WasmSource } from './component.js';
export { createScriptImports, quickjsVariant, quickjsWasmName } from './sandbox.js';
export { consoleLog } from './log.js';

export type ReplayMode = 'inspect' | 'recorded';

export interface BrowserReplayOptions {
  /** Where the wasm binaries come from (default: inline table, else `<base>wasm/`). */
  wasm?: WasmSource;
  /** Base URL of the page's files (default: the document's URL). */
  base?: string | URL;
  log?: HostLog;
}

export class BrowserReplayHost {
  private constructor(
    private readonly wasm: WasmSource,
    private readonly loader: ComponentLoader,
    private readonly log: HostLog,
    /** Milliseconds spent compiling and instantiating the component and QuickJS the first time. */
    readonly warmupMs: number,
    readonly engineDescription: Record<string, unknown>,
  ) {}

  static async create(options: BrowserReplayOptions = {}): Promise<BrowserReplayHost> {
    const base = options.base ?? new URL('wasm/', globalThis.document?.baseURI ?? globalThis.location?.href);
    const wasm = options.wasm ?? defaultWasmSource(base);
    const log = options.log ?? consoleLog();
    const loader = browserComponentLoader(wasm);
    const t0 = performance.now();
    const scripts = await createScriptImports(wasm);
    try {
      const engine = await EngineInstance.create(loader, { load: () => undefined, ...scripts, log });
      const description = engine.describe();
      return new BrowserReplayHost(wasm, loader, log, performance.now() - t0, description);
    } finally {
      scripts.evaluator.dispose();
    }
  }

  /** Replays an export; never calls a gateway (the engine's replay stages none). */
  async replay(exported: RunExport, options: { mode: ReplayMode; editedPlan?: ExecutionPlan }): Promise<Record<string, unknown>> {
    const scripts = await createScriptImports(this.wasm);
    try {
      const engine = await EngineInstance.create(this.loader, { load: () => undefined, ...scripts, log: this.log });
      return engine.replay({ mode: options.mode, plan: exported.plan, ...(options.editedPlan ? { editedPlan: options.editedPlan } : {}), events: exported.events, artifacts: artifactTexts(exported) });
    } finally {
      scripts.evaluator.dispose();
    }
  }
}

let shared: Promise<BrowserReplayHost> | undefined;

/** One-call form for pages: replays `exported` in `mode` on a host created on first use. */
export async function replayInBrowser(exported: RunExport, mode: ReplayMode, options?: BrowserReplayOptions): Promise<Record<string, unknown>> {
  const host = options ? BrowserReplayHost.create(options) : (shared ??= BrowserReplayHost.create());
  return (await host).replay(exported, { mode });
}

// The replay page's worker: the engine component and QuickJS run here, off the page's main
// thread, so a replay of a 100,000-event export (seconds of wasm) never freezes the graph or the
// journal table. Same code as an in-page replay (BrowserReplayHost): the report text is
// JSON.stringify of the component's report, made here and shown verbatim by the page.
import { BrowserReplayHost, type ReplayMode } from '../index.js';
import { inlineWasmSource, fetchWasmSource } from '../component.js';
import { parseExportText, type RunExport } from '../journal.js';
import { consoleLog } from '../log.js';
import type { WorkerReply, WorkerRequest } from './replayer.js';

const scope = globalThis as unknown as { onmessage: ((ev: MessageEvent<WorkerRequest>) => void) | null; postMessage(message: WorkerReply): void };
let host: Promise<BrowserReplayHost> | undefined;
let loaded: { id: number; exported: RunExport } | undefined;

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

scope.onmessage = (ev) => {
  const req = ev.data;
  if (req.type === 'init') {
    const wasm = req.inline ? inlineWasmSource(req.inline) : fetchWasmSource(req.base);
    host = BrowserReplayHost.create({ wasm, base: req.base, log: consoleLog('warn') });
    host.then(
      (h) => scope.postMessage({ type: 'ready', warmupMs: h.warmupMs, engineDescription: h.engineDescription }),
      (err) => scope.postMessage({ type: 'init-error', message: message(err) }),
    );
  } else if (req.type === 'load') {
    // The page parsed the same text already (it only reaches here when that succeeded).
    loaded = { id: req.id, exported: parseExportText(req.text) };
  } else if (req.type === 'replay') {
    void (async () => {
      try {
        if (!host) throw new Error('the replay worker was not initialised');
        if (!loaded || loaded.id !== req.id) throw new Error(`export ${req.id} is not loaded in the replay worker`);
        const report = await (await host).replay(loaded.exported, { mode: req.mode as ReplayMode });
        scope.postMessage({ type: 'report', call: req.call, text: JSON.stringify(report) });
      } catch (err) {
        scope.postMessage({ type: 'replay-error', call: req.call, message: message(err) });
      }
    })();
  }
};

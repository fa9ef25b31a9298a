// Where the page's replays run. Over http(s) in a dedicated worker (replay-worker.js), so the
// page stays responsive while the component replays a large export; from file://, where Chromium
// refuses to start a worker, in the page itself, as before. Both run BrowserReplayHost.replay
// and return JSON.stringify of its report, so the text is the same bytes either way.
import { BrowserReplayHost, type ReplayMode } from '../index.js';
import type { RunExport } from '../journal.js';
import { consoleLog } from '../log.js';

export type WorkerRequest =
  | { type: 'init'; base: string; inline?: Record<string, string> }
  | { type: 'load'; id: number; text: string }
  | { type: 'replay'; id: number; call: number; mode: ReplayMode };

export type WorkerReply =
  | { type: 'ready'; warmupMs: number; engineDescription: Record<string, unknown> }
  | { type: 'init-error'; message: string }
  | { type: 'report'; call: number; text: string }
  | { type: 'replay-error'; call: number; message: string };

export interface Replayer {
  /** `worker` or `page`: where the component runs. */
  readonly where: 'worker' | 'page';
  readonly warmupMs: number;
  readonly engineDescription: Record<string, unknown>;
  /** Hands a parsed export (and its text) to the replayer; later replays use it. */
  load(text: string, exported: RunExport): void;
  /** Replays the last loaded export; the report's JSON text. */
  replay(mode: ReplayMode): Promise<string>;
}

class PageReplayer implements Replayer {
  readonly where = 'page';
  private exported: RunExport | undefined;
  constructor(private readonly host: BrowserReplayHost) {}
  get warmupMs(): number {
    return this.host.warmupMs;
  }
  get engineDescription(): Record<string, unknown> {
    return this.host.engineDescription;
  }
  load(_text: string, exported: RunExport): void {
    this.exported = exported;
  }
  async replay(mode: ReplayMode): Promise<string> {
    if (!this.exported) throw new Error('no export is loaded');
    return JSON.stringify(await this.host.replay(this.exported, { mode }));
  }
}

class WorkerReplayer implements Replayer {
  readonly where = 'worker';
  private id = 0;
  private calls = 0;
  private readonly pending = new Map<number, { resolve: (text: string) => void; reject: (err: Error) => void }>();
  constructor(
    private readonly worker: Worker,
    readonly warmupMs: number,
    readonly engineDescription: Record<string, unknown>,
  ) {
    worker.onmessage = (ev: MessageEvent<WorkerReply>) => {
      const m = ev.data;
      if (m.type !== 'report' && m.type !== 'replay-error') return;
      const p = this.pending.get(m.call);
      if (!p) return;
      this.pending.delete(m.call);
      if (m.type === 'report') p.resolve(m.text);
      else p.reject(new Error(m.message));
    };
    worker.onerror = (ev) => {
      for (const p of this.pending.values()) p.reject(new Error(`the replay worker failed: ${ev.message}`));
      this.pending.clear();
    };
  }
  load(text: string): void {
    this.id += 1;
    this.post({ type: 'load', id: this.id, text });
  }
  replay(mode: ReplayMode): Promise<string> {
    const call = ++this.calls;
    return new Promise((resolve, reject) => {
      this.pending.set(call, { resolve, reject });
      this.post({ type: 'replay', id: this.id, call, mode });
    });
  }
  private post(m: WorkerRequest): void {
    this.worker.postMessage(m);
  }
}

function startWorker(base: URL, inline: Record<string, string> | undefined): Promise<WorkerReplayer> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('replay-worker.js', document.baseURI));
    worker.onmessage = (ev: MessageEvent<WorkerReply>) => {
      if (ev.data.type === 'ready') resolve(new WorkerReplayer(worker, ev.data.warmupMs, ev.data.engineDescription));
      else if (ev.data.type === 'init-error') {
        worker.terminate();
        reject(new Error(ev.data.message));
      }
    };
    worker.onerror = (ev) => {
      ev.preventDefault();
      worker.terminate();
      reject(new Error(`the replay worker could not start: ${ev.message || 'error'}`));
    };
    worker.postMessage({ type: 'init', base: base.href, ...(inline ? { inline } : {}) } satisfies WorkerRequest);
  });
}

/** A worker when the page can start one (http/https), else the component in the page. */
export async function createReplayer(base: URL, inline: Record<string, string> | undefined): Promise<Replayer> {
  if (typeof Worker === 'function' && location.protocol !== 'file:') {
    try {
      return await startWorker(base, inline);
    } catch (err) {
      console.warn(`agent-workflow warn: replaying in the page: ${(err as Error).message}`);
    }
  }
  return new PageReplayer(await BrowserReplayHost.create({ base, log: consoleLog('warn') }));
}

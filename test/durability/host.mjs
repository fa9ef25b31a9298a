// A Node host assembled from the built pieces (dist/), with the two seams the fault tests use:
// a JournalStore wrapper and a Gateway wrapper. Nothing here changes production code: faults are
// injected around the store and the gateway, at the host boundary.
import { EngineInstance } from '../../dist/hosts/core/engine-instance.js';
import { Kernel } from '../../dist/hosts/core/kernel.js';
import { nodeComponentLoader } from '../../dist/hosts/node/sdk/component.js';
import { registryGateway } from '../../dist/hosts/node/sdk/gateway.js';
import { SqliteJournalStore } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { createScriptImports } from '../../dist/hosts/node/sdk/sandbox.js';

export const everything = { id: 'local', scopes: ['*'] };

let scriptsPromise;
/** One QuickJS evaluator per process: creating it is the slow part of a host. */
export function sharedScripts() {
  scriptsPromise ??= createScriptImports();
  return scriptsPromise;
}

/**
 * Builds engine + kernel over `store` (any JournalStore) and `gateway` (any Gateway).
 * `load` is what the engine reads on a cold activation; by default the store's own.
 */
export async function buildHost({ store, gateway, now, log = () => undefined, timers }) {
  const scripts = await sharedScripts();
  const engine = await EngineInstance.create(nodeComponentLoader(), {
    load: (runId) => store.load(runId),
    evaluateScript: scripts.evaluateScript,
    checkScriptSyntax: scripts.checkScriptSyntax,
    log,
  });
  const kernel = new Kernel({ store, engine, gateway, log, now, authority: () => everything, ...(timers !== undefined ? { timers } : {}) });
  const compile = (template) => engine.compile({ root: { template } });
  /** Every event of a run, parsed, by pages. */
  const events = (runId) => allEvents(store, runId);
  const replay = (runId) => {
    const tail = store.load(runId);
    const plan = JSON.parse(new TextDecoder().decode(tail.plan));
    return engine.replay({ mode: 'recorded', plan, events: events(runId) });
  };
  return { engine, kernel, store, compile, events, replay, scripts };
}

export function allEvents(store, runId) {
  const out = [];
  for (let after = 0; ; ) {
    const page = store.readEvents(runId, after, 5_000);
    for (const e of page.events) out.push(JSON.parse(e));
    after = page.lastSeq;
    if (!page.more) break;
  }
  return out;
}

export { SqliteJournalStore, registryGateway };

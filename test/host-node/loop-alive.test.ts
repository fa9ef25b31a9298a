// The engine component compiles and instantiates with the event loop held by a referenced timer
// (hosts/shared/loop-alive.ts): WebAssembly's promises settle through V8's task queue, and a
// process with nothing else on its loop would otherwise run everything after the instantiation
// inside Node's task drain, waiting for V8's background compilation at every turn (a quarter to
// half a second of a cold start, bench/cold/README.md). Each case is a fresh Node process, so no
// timer of the test runner is on its loop; what is on the loop is read from
// `process.getActiveResourcesInfo()`.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const dist = (p: string) => JSON.stringify(new URL(`../../dist/${p}`, import.meta.url).href);

function runChild(script: string): Record<string, unknown> {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

const timers = 'process.getActiveResourcesInfo().filter((r) => r === "Timeout").length';

describe('the event loop while the engine instantiates', () => {
  it('holds one timer while the core modules compile and releases it once the instance is live', () => {
    const out = runChild(`
      const { EngineInstance } = await import(${dist('hosts/core/engine-instance.js')});
      const { nodeComponentLoader } = await import(${dist('hosts/node/sdk/component.js')});
      const { sha256Hex } = await import(${dist('hosts/shared/digest.js')});
      const loader = nodeComponentLoader();
      const during = [];
      const watched = { instantiate: loader.instantiate, getCoreModule: (path) => { during.push(${timers}); return loader.getCoreModule(path); } };
      const before = ${timers};
      const engine = await EngineInstance.create(watched, { load: () => undefined, evaluateScript: () => ({ ok: false, error: { code: 'script.runtime', message: 'none' } }), checkScriptSyntax: () => undefined, sha256Hex, log: () => undefined });
      const after = ${timers};
      const live = typeof engine.describe().nodeDefinitionSetHash === 'string';
      process.stdout.write(JSON.stringify({ before, during: [...new Set(during)], after, modules: during.length, live }));
    `);
    expect(out).toEqual({ before: 0, during: [1], after: 0, modules: 13, live: true });
  });

  it('releases the timer when the work fails', () => {
    const out = runChild(`
      const { withLoopAlive } = await import(${dist('hosts/shared/loop-alive.js')});
      let during;
      const error = await withLoopAlive(async () => { during = ${timers}; throw new Error('no component'); }).then(() => undefined, (err) => err.message);
      process.stdout.write(JSON.stringify({ during, after: ${timers}, error }));
    `);
    expect(out).toEqual({ during: 1, after: 0, error: 'no component' });
  });
});

// `WorkflowRuntime.open` compiles the engine component on V8's background threads while the store
// opens on the main thread (hosts/node/runtime.ts, bench/cold/README.md). Either may fail while the
// other is under way: the caller gets that failure as a typed error, the other half is settled
// and released (no unhandled rejection, no timer left on the loop, the store file closed). Each
// case is a fresh Node process, so an unhandled rejection would end it with a non-zero status.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const dist = (p: string) => JSON.stringify(new URL(`../../dist/${p}`, import.meta.url).href);

function runChild(script: string, env: Record<string, string> = {}): Record<string, unknown> {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, ...env } });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

const openAndReport = (dir: string) => `
  const { WorkflowRuntime } = await import(${dist('hosts/node/index.js')});
  const result = await WorkflowRuntime.open({ dir: ${JSON.stringify(dir)}, log: () => undefined }).then(
    async (rt) => { await rt.close(); return { opened: true }; },
    (err) => ({ code: err.code, message: err.message }),
  );
  await new Promise((r) => setTimeout(r, 50));
  const timers = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  process.stdout.write(JSON.stringify({ ...result, timers }));
`;

describe('opening a runtime while the engine compiles', () => {
  it('a store that cannot open fails the open with its own error, and the engine settles quietly', () => {
    const dir = mkdtempSync(join(tmpdir(), 'adw-open-order-'));
    writeFileSync(join(dir, 'workflow.db'), 'not a database, and not ours to touch\n');
    const out = runChild(openAndReport(dir));
    expect(out.code).toBe('store.not-a-store');
    expect(out.timers).toBe(0);
  });

  it('an engine that cannot load fails the open with its error, and the store is closed again', () => {
    const dir = mkdtempSync(join(tmpdir(), 'adw-open-order-'));
    const out = runChild(openAndReport(dir), { AGENT_WORKFLOW_WASM_TIER: 'fastest' });
    expect(out.code).toBe('host.bad-option');
    expect(String(out.message)).toContain('AGENT_WORKFLOW_WASM_TIER');
    expect(out.timers).toBe(0);
    // The store the failed open created is closed: a second process opens it and runs on it.
    const again = runChild(openAndReport(dir));
    expect(again).toEqual({ opened: true, timers: 0 });
  });
});

// The Node host compiles the engine with V8's baseline wasm tier (Liftoff only) unless
// AGENT_WORKFLOW_WASM_TIER=optimizing asks for V8's dynamic tiering; an unknown value is refused
// with a typed error before anything is compiled. Each case is a fresh Node process, because the
// tier is a process-wide V8 flag set once, before the first engine module is compiled.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const entry = new URL('../../dist/hosts/node/index.js', import.meta.url).href;

const script = `
const { WorkflowRuntime, engineWasmTier } = await import(${JSON.stringify(entry)});
const before = engineWasmTier() ?? null;
const api = 'workflow.gm-hz.dev/v1alpha1';
const nodes = [{ id: 'start', uses: 'core.start@1' }, { id: 'a', uses: 'tool.call@1', config: { tool: 'noop' } }, { id: 'end', uses: 'core.end@1' }];
const template = { apiVersion: api, kind: 'WorkflowTemplate', metadata: { id: 'tier' }, spec: { requires: ['tool:noop'], nodes, edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'end' }] } };
let out;
try {
  const rt = await WorkflowRuntime.open({ dir: process.argv[1], tools: { noop: { execute: () => ({ ok: 1 }) } }, log: () => undefined });
  const result = await (await rt.launch(template, { input: {} })).result;
  await rt.close();
  out = { before, tier: engineWasmTier(), status: result.status };
} catch (err) {
  out = { before, error: { name: err.name, code: err.code, message: err.message } };
}
process.stdout.write(JSON.stringify(out));
`;

function runWith(env: Record<string, string | undefined>): Record<string, unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'wasm-tier-'));
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.AGENT_WORKFLOW_WASM_TIER;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) childEnv[k] = v;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir], { env: childEnv, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('the wasm tier of the engine', () => {
  it('is the baseline tier by default, set when the engine is first compiled', () => {
    expect(runWith({})).toEqual({ before: null, tier: 'baseline', status: 'completed' });
  });

  it('is V8 dynamic tiering with AGENT_WORKFLOW_WASM_TIER=optimizing', () => {
    expect(runWith({ AGENT_WORKFLOW_WASM_TIER: 'optimizing' })).toEqual({ before: null, tier: 'optimizing', status: 'completed' });
  });

  it('refuses an unknown value with a typed error and compiles nothing', () => {
    const out = runWith({ AGENT_WORKFLOW_WASM_TIER: 'turbo' });
    expect(out.error).toMatchObject({ code: 'host.bad-option' });
    expect((out.error as { message: string }).message).toContain('AGENT_WORKFLOW_WASM_TIER');
    expect(out.before).toBe(null);
  });
});

describe('the CLI with a bad AGENT_WORKFLOW_WASM_TIER', () => {
  it('prints the typed error and exits with the usage code', () => {
    const cli = new URL('../../dist/hosts/node/cli/main.js', import.meta.url).pathname;
    const template = new URL('../../examples/weekly-report/weekly-report.json', import.meta.url).pathname;
    const dir = mkdtempSync(join(tmpdir(), 'wasm-tier-cli-'));
    const r = spawnSync(process.execPath, [cli, 'validate', template], { cwd: dir, env: { ...process.env, AGENT_WORKFLOW_WASM_TIER: 'turbo' }, encoding: 'utf8' });
    expect(r.status, r.stderr + r.stdout).toBe(2);
    expect(r.stderr + r.stdout).toContain('host.bad-option');
    const ok = spawnSync(process.execPath, [cli, 'validate', template], { cwd: dir, env: { ...process.env, AGENT_WORKFLOW_WASM_TIER: 'optimizing' }, encoding: 'utf8' });
    expect(ok.status, ok.stderr + ok.stdout).toBe(0);
  });
});

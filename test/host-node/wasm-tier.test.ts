// The Node host's memory flags. A process that embeds the SDK keeps V8's defaults (dynamic wasm
// tiering, a young generation that grows) unless it asks for the lean settings
// (AGENT_WORKFLOW_WASM_TIER=baseline: Liftoff only; AGENT_WORKFLOW_YOUNG_GEN=fixed); the product's
// own `agent-workflow` processes ask for both. A process started with its own semi-space flag is
// left alone. An unknown value is refused with a typed error before anything is compiled. Each
// case is a fresh Node process, because these are process-wide V8 flags set once, before the
// first engine module is compiled.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const entry = new URL('../../dist/hosts/node/index.js', import.meta.url).href;

const script = `
const { WorkflowRuntime, engineWasmTier, engineYoungGen } = await import(${JSON.stringify(entry)});
const before = engineWasmTier() ?? null;
const api = 'workflow.gm-hz.dev/v1alpha1';
const nodes = [{ id: 'start', uses: 'core.start@1' }, { id: 'a', uses: 'tool.call@1', config: { tool: 'noop' } }, { id: 'end', uses: 'core.end@1' }];
const template = { apiVersion: api, kind: 'WorkflowTemplate', metadata: { id: 'tier' }, spec: { requires: ['tool:noop'], nodes, edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'end' }] } };
let out;
try {
  const rt = await WorkflowRuntime.open({ dir: process.argv[1], tools: { noop: { execute: () => ({ ok: 1 }) } }, log: () => undefined });
  const result = await (await rt.launch(template, { input: {} })).result;
  await rt.close();
  // Short-lived objects, many of them surviving a scavenge or two: what makes V8 grow new space.
  let keep = [];
  for (let i = 0; i < 3e6; i++) { keep.push({ a: i, b: 'x' + i }); if (keep.length > 50000) keep = []; }
  out = { before, tier: engineWasmTier(), young: engineYoungGen(), status: result.status, newSpace: (await import('node:v8')).getHeapSpaceStatistics().find((x) => x.space_name === 'new_space').space_size };
} catch (err) {
  out = { before, error: { name: err.name, code: err.code, message: err.message } };
}
process.stdout.write(JSON.stringify(out));
`;

function runWith(env: Record<string, string | undefined>, flags: string[] = []): Record<string, unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'wasm-tier-'));
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.AGENT_WORKFLOW_WASM_TIER;
  delete childEnv.AGENT_WORKFLOW_YOUNG_GEN;
  delete childEnv.NODE_OPTIONS;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) childEnv[k] = v;
  const r = spawnSync(process.execPath, [...flags, '--input-type=module', '-e', script, dir], { env: childEnv, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('the wasm tier of the engine', () => {
  it("is V8's dynamic tiering in an embedding process by default, set when the engine is first compiled", () => {
    expect(runWith({})).toMatchObject({ before: null, tier: 'optimizing', status: 'completed' });
  });

  it('is the baseline tier (Liftoff only) with AGENT_WORKFLOW_WASM_TIER=baseline', () => {
    expect(runWith({ AGENT_WORKFLOW_WASM_TIER: 'baseline' })).toMatchObject({ before: null, tier: 'baseline', status: 'completed' });
  });
});

describe('the young generation', () => {
  it('is left to V8 by default; AGENT_WORKFLOW_YOUNG_GEN=fixed keeps it at its initial size', () => {
    const fixed = runWith({ AGENT_WORKFLOW_YOUNG_GEN: 'fixed' });
    expect(fixed).toMatchObject({ young: 'fixed', status: 'completed' });
    const grow = runWith({});
    expect(grow).toMatchObject({ young: 'grow', status: 'completed' });
    // The same allocations grow new space only when V8 is left to grow it.
    expect(fixed.newSpace as number).toBeLessThan(grow.newSpace as number);
  });

  it('is left to the process when it was started with its own semi-space flag', () => {
    expect(runWith({}, ['--max-semi-space-size=4'])).toMatchObject({ young: 'process', status: 'completed' });
    expect(runWith({ NODE_OPTIONS: '--max-semi-space-size=4' })).toMatchObject({ young: 'process', status: 'completed' });
  });

  it('refuses an unknown AGENT_WORKFLOW_YOUNG_GEN with a typed error', () => {
    const out = runWith({ AGENT_WORKFLOW_YOUNG_GEN: 'huge' });
    expect(out.error).toMatchObject({ code: 'host.bad-option' });
    expect((out.error as { message: string }).message).toContain('AGENT_WORKFLOW_YOUNG_GEN');
  });
});

describe('an unknown wasm tier', () => {

  it('is refused with a typed error and nothing is compiled', () => {
    const out = runWith({ AGENT_WORKFLOW_WASM_TIER: 'turbo' });
    expect(out.error).toMatchObject({ code: 'host.bad-option' });
    expect((out.error as { message: string }).message).toContain('AGENT_WORKFLOW_WASM_TIER');
    expect(out.before).toBe(null);
  });
});

describe('the agent-workflow processes', () => {
  it('serve with the lean settings unless the environment picks others', async () => {
    const cli = new URL('../../dist/hosts/node/cli/main.js', import.meta.url).pathname;
    const serving = (env: Record<string, string>) => {
      const dir = mkdtempSync(join(tmpdir(), 'wasm-tier-serve-'));
      const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
      if (!('AGENT_WORKFLOW_WASM_TIER' in env)) delete childEnv.AGENT_WORKFLOW_WASM_TIER;
      if (!('AGENT_WORKFLOW_YOUNG_GEN' in env)) delete childEnv.AGENT_WORKFLOW_YOUNG_GEN;
      return new Promise<Record<string, any>>((resolve, reject) => {
        const child = spawn(process.execPath, [cli, 'serve', '--dir', dir], { cwd: dir, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout!.on('data', (d) => {
          out += d;
          const line = out.split('\n').find((l) => l.includes('"Serving"'));
          if (line) {
            child.kill('SIGTERM');
            resolve(JSON.parse(line));
          }
        });
        child.on('exit', (code) => reject(new Error(`serve exited ${code} before serving: ${out}`)));
      });
    };
    expect((await serving({})).memory).toEqual({ wasmTier: 'baseline', youngGen: 'fixed' });
    expect((await serving({ AGENT_WORKFLOW_WASM_TIER: 'optimizing', AGENT_WORKFLOW_YOUNG_GEN: 'grow' })).memory).toEqual({ wasmTier: 'optimizing', youngGen: 'grow' });
  }, 60_000);
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

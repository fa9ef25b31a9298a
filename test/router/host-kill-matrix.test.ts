// Kill matrix: per profile, 16 times SIGKILL a router process at a seeded random point while it
// recovers the previous iteration's leftovers and runs new workflows of local tools; finally
// reopen, recover, and check: every run completed or paused(needs_attention), every completed
// run replays exactly (recorded mode), and no invocation id was ever executed twice (the local
// tool appends its invocation id to a side file each time it runs).
//
// Seed: printed; set ROUTER_KILL_SEED=<n> to re-run one.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir, memoryFlags } from './helpers.js';

const { RouterHost } = await import('../../dist/hosts/router/index.js');

const root = fileURLToPath(new URL('../../', import.meta.url));
const cliJs = path.join(root, 'dist/hosts/router/cli.js');
const fixtures = path.join(root, 'test/router/fixtures');
const iterations = 16;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function writeHostModule(dir: string, side: string): string {
  const file = path.join(dir, 'host.mjs');
  const tool = { executable: '/bin/sh', args: [path.join(fixtures, 'kill-step.sh'), '{{input.n}}'], timeoutMs: 10_000, env: { SIDE_FILE: side, PATH: '/usr/bin:/bin' } };
  fs.writeFileSync(file, `export default { tools: { step: ${JSON.stringify(tool)} } };\n`);
  return file;
}

/** Starts a router child (flags given, so it does not re-execute) and SIGKILLs it after `killAfterMs`. */
function killedRun(state: string, profile: string, config: string, manifest: string, killAfterMs: number): Promise<{ killed: boolean; code: number | null; recovery?: Record<string, number> }> {
  const child = spawn(process.execPath, [...memoryFlags, cliJs, 'start', '--dir', state, '--profile', profile, '--config', config, '--runs', manifest, '--cadence-ms', '2', '--until-idle'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (c) => (stderr += c));
  child.stdout!.on('data', (c) => (stdout += c));
  const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  return new Promise((resolve, reject) =>
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (signal !== 'SIGKILL' && code !== 0 && code !== 1) reject(new Error(`router child exited ${code}: ${stderr}`));
      else {
        const started = stdout.split('\n').find((l) => l.includes('"RouterStarted"'));
        resolve({ killed: signal === 'SIGKILL', code, ...(started ? { recovery: JSON.parse(started).recovery } : {}) });
      }
    }),
  );
}

async function matrix(profile: 'edge' | 'standalone', seed: number) {
  const random = mulberry32(seed);
  const work = tempDir(`router-kill-${profile}-`);
  const state = path.join(work, 'state');
  const side = path.join(work, 'executions.txt');
  const config = writeHostModule(work, side);
  const manifest = path.join(work, 'runs.json');
  fs.writeFileSync(manifest, JSON.stringify([{ template: path.join(fixtures, 'kill-workflow.json'), input: { n: 1 }, count: 3 }]));
  let kills = 0;
  const recovered: Record<string, number> = {};
  const recoveryLog: unknown[] = [];
  for (let i = 0; i < iterations; i++) {
    const killAfterMs = Math.floor(300 + random() * 2400);
    const r = await killedRun(state, profile, config, manifest, killAfterMs);
    if (r.killed) kills++;
    for (const [k, v] of Object.entries(r.recovery ?? {})) recovered[k] = (recovered[k] ?? 0) + v;
    recoveryLog.push([killAfterMs, r.killed, r.recovery]);
  }
  // Reopen in this process: recovery, then run until nothing can progress.
  const step = JSON.parse(fs.readFileSync(config, 'utf8').replace(/^export default \{ tools: \{ step: /, '').replace(/ \} \};\s*$/, ''));
  const host = await RouterHost.open({ dir: state, profile, cadenceMs: 1, tools: { step }, log: () => undefined });
  try {
    await host.whenIdle();
    const runs = host.listRuns();
    const requested = new Set<string>();
    let completed = 0;
    for (const run of runs) {
      const outcome = host.getRun(run.runId);
      const events = host.events(run.runId);
      for (const e of events) if (e.type === 'capability.requested') requested.add(e.payload.invocationId);
      if (outcome.status === 'completed') {
        completed++;
        expect(outcome.output).toEqual({ n: 6 }); // ((1 + 1) * 2 + 1) + 1
        expect(host.replay(run.runId, 'recorded').identical).toBe(true);
      } else {
        expect({ runId: run.runId, status: outcome.status, pausedReason: outcome.pausedReason }).toEqual({ runId: run.runId, status: 'paused', pausedReason: 'needs_attention' });
      }
    }
    const executions = fs.existsSync(side) ? fs.readFileSync(side, 'utf8').split('\n').filter(Boolean) : [];
    const counts = new Map<string, number>();
    for (const id of executions) counts.set(id, (counts.get(id) ?? 0) + 1);
    const duplicated = [...counts].filter(([, n]) => n > 1);

    expect(duplicated).toEqual([]);
    expect(executions.every((id) => requested.has(id))).toBe(true);
    const stats = host.stats();
    console.log(`kill matrix ${profile}: seed ${seed}, ${kills}/${iterations} killed, ${runs.length} runs, ${completed} completed, ${runs.length - completed} needs_attention, ${executions.length} tool executions, 0 duplicated; recoveries during the matrix ${JSON.stringify(recovered)}; final ${JSON.stringify(stats.recovery)}`);
    expect(completed).toBeGreaterThan(0);
  } finally {
    await host.stop();
  }
  fs.rmSync(work, { recursive: true, force: true });
}

describe('router kill matrix', () => {
  const seed = process.env.ROUTER_KILL_SEED !== undefined ? Number(process.env.ROUTER_KILL_SEED) : Math.floor(Math.random() * 2 ** 31);
  console.log(`router kill matrix seed ${seed} (re-run with ROUTER_KILL_SEED=${seed})`);
  it(`edge and standalone: ${iterations} SIGKILLs each, recovery, exact replay, no duplicated attempt (seed ${seed})`, async () => {
    await Promise.all([matrix('edge', seed), matrix('standalone', seed + 1)]);
  }, 120_000);
});

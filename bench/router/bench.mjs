#!/usr/bin/env node
// Router host figures for both profiles: cold start to the end of the first cycle, peak RSS and
// commit latency of 16 concurrent example runs (8 weekly-report, 8 echo), wall time. Each row is
// one fresh router process started through its entry (so the memory flags apply). Prints a
// table; never fails a build. `runRouterBench()` returns the rows.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cliJs = join(root, 'dist/hosts/router/cli.js');
const fixtures = join(root, 'test/router/fixtures');

function runOnce(profile) {
  const dir = mkdtempSync(join(tmpdir(), `router-bench-${profile}-`));
  const t0 = performance.now();
  const child = spawn(process.execPath, [cliJs, 'start', '--dir', dir, '--profile', profile, '--config', join(fixtures, 'examples-host.mjs'), '--runs', join(fixtures, 'examples-runs.json'), '--cadence-ms', '2', '--until-idle'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (c) => (stdout += c));
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      const wallMs = performance.now() - t0;
      rmSync(dir, { recursive: true, force: true });
      const summary = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.kind === 'RouterSummary');
      if (!summary) return resolve({ system: `router/${profile}`, error: `exit ${code}` });
      resolve({
        system: `router/${profile}`,
        runs: summary.runs.length,
        completed: summary.runs.filter((r) => r.status === 'completed').length,
        coldStartToFirstCycleMs: Math.round(summary.stats.firstCycleMs),
        wallMs: Math.round(wallMs),
        cycles: summary.stats.cycles,
        peakRssMiB: +(summary.peakRssBytes / 2 ** 20).toFixed(1),
        commits: summary.stats.commitLatency.count,
        commitP50Ms: +summary.stats.commitLatency.p50Ms.toFixed(2),
        commitP95Ms: +summary.stats.commitLatency.p95Ms.toFixed(2),
      });
    }),
  );
}

export async function runRouterBench() {
  const rows = [];
  for (const profile of ['edge', 'standalone']) rows.push(await runOnce(profile));
  return rows;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const rows = await runRouterBench();
  console.table(rows);
}

#!/usr/bin/env node
// Compile of a 4-node template, as a user calls it: `runtime.compile(template)` on a
// `WorkflowRuntime` opened with its defaults (SQLite in a fresh directory), the first compile of
// the process and the steady cost over distinct templates (each a new `metadata.id`, so every
// call compiles); and `launch(template)` of one template many times, counting the calls into the
// engine's `compile` (the runtime's plan cache should make it one). Runs in a fresh process of
// its own, so the first compile is the process's first. Prints a table; never asserts.
//
//   node bench/compile/bench.mjs [--quick] [--json]        (imports the built package: `node build.mjs` first)
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sequence } from '../lib/templates.mjs';
import { stats } from '../lib/util.mjs';

const dist = (p) => new URL(`../../dist/${p}`, import.meta.url).href;
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

/** The rows of one fresh process running this file (what `npm run bench` calls). */
export function runCompileBench(options = {}) {
  const quick = options.quick ?? process.env.BENCH_QUICK === '1';
  const args = [fileURLToPath(import.meta.url), '--json', ...(quick ? ['--quick'] : [])];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`compile bench failed: ${err.message} ${stderr}`));
      try {
        resolve(JSON.parse(stdout));
      } catch (e) {
        reject(new Error(`compile bench printed no rows: ${e.message}`));
      }
    });
  });
}

async function measure(options = {}) {
  const quick = options.quick ?? process.env.BENCH_QUICK === '1';
  const warmup = quick ? 20 : 100;
  const measured = quick ? 50 : 500;
  const launches = quick ? 50 : 500;
  const loadAtStart = load();
  const { WorkflowRuntime } = await import(dist('hosts/node/index.js'));
  const { EngineInstance } = await import(dist('hosts/core/engine-instance.js'));
  // Counts the calls into the component's `compile` made by this process's runtime.
  let engineCompiles = 0;
  const compile = EngineInstance.prototype.compile;
  EngineInstance.prototype.compile = function counted(...args) {
    engineCompiles++;
    return compile.apply(this, args);
  };
  const dir = mkdtempSync(join(tmpdir(), 'bench-compile-'));
  const runtime = await WorkflowRuntime.open({ dir, tools: { noop: { execute: () => null } }, log: () => undefined });
  try {
    // start, two tool calls, end: the 2-step template of the other workloads, under a new id each time.
    const template = (i) => sequence(`compile-${i}`, 2);
    let t0 = performance.now();
    await runtime.compile(template(-1));
    const firstMs = performance.now() - t0;
    const samples = [];
    for (let i = 0; i < warmup + measured; i++) {
      const t = template(i);
      t0 = performance.now();
      await runtime.compile(t);
      if (i >= warmup) samples.push(performance.now() - t0);
    }
    const st = stats(samples);
    const steady = { n: st.n, p50Ms: st.median, p99Ms: st.p99, minMs: st.min };

    const once = sequence('compile-once', 2);
    const before = engineCompiles;
    for (let i = 0; i < launches; i++) {
      const outcome = await (await runtime.launch(once, { input: {} })).result;
      if (outcome.status !== 'completed') throw new Error(`launch ${i} ended ${outcome.status}`);
    }
    const compilesForLaunches = engineCompiles - before;
    const machine = { loadAverage: `${loadAtStart} → ${load()}`, cores: cpus().length };
    return [
      { section: 'first runtime.compile of a 4-node template in the process', n: 1, p50Ms: firstMs, p99Ms: firstMs, minMs: firstMs, engineCompiles: 1, targetMs: 0.5, ...machine },
      { section: 'runtime.compile of a 4-node template (distinct templates, steady)', ...steady, engineCompiles: steady.n, targetMs: 0.5, met: steady.p50Ms <= 0.5, ...machine },
      { section: `launch(template) of one 4-node template ×${launches}`, n: launches, engineCompiles: compilesForLaunches, target: 'compiled once', met: compilesForLaunches === 1, ...machine },
    ];
  } finally {
    EngineInstance.prototype.compile = compile;
    await runtime.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const rows = await measure({ quick: process.argv.includes('--quick') });
  if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
  else console.table(rows);
}

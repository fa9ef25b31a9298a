#!/usr/bin/env node
// Script sandbox benchmark: evaluations per second and p50/p99 latency for the
// in-process QuickJS evaluator, the evaluation service over HTTP (127.0.0.1),
// and node:vm as a speed baseline (node:vm is NOT a sandbox). Prints a table;
// never asserts. Imports the built package: run `node build.mjs` first.
//
//   node bench/sandbox/bench.mjs [--quick] [--json]
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';

const dist = new URL('../../dist/sandbox/', import.meta.url);

/** The workloads: a trivial script, and 100 items of JSON in and out (the FINDINGS workload). */
function workloads() {
  const items = JSON.stringify({ items: Array.from({ length: 100 }, (_, i) => ({ id: i, name: `item${i}`, v: i * 1.5 })) });
  return [
    { name: 'tiny', source: 'return input + 1', input: '41' },
    { name: 'items100', source: '(input) => input.items.filter((x) => x.id % 2).map((x) => ({ id: x.id, v: x.v * 2 }))', input: items },
  ];
}

function summarise(label, workload, samplesUs, wallMs, concurrency) {
  const sorted = [...samplesUs].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return {
    system: label,
    workload,
    concurrency,
    evaluations: sorted.length,
    evalsPerSec: Math.round((sorted.length / wallMs) * 1000),
    p50Us: Math.round(at(0.5)),
    p99Us: Math.round(at(0.99)),
  };
}

async function timeSequential(n, fn) {
  const samples = [];
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    samples.push((performance.now() - t) * 1000);
  }
  return { samples, wallMs: performance.now() - start };
}

async function timeConcurrent(n, concurrency, fn) {
  const samples = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const t = performance.now();
        await fn();
        samples.push((performance.now() - t) * 1000);
      }
    }),
  );
  return { samples, wallMs: performance.now() - start };
}

/** Runs the benchmark and returns its rows (also used by the main bench runner). */
export async function runSandboxBench({ quick = false } = {}) {
  const { ScriptEvaluator } = await import(new URL('index.js', dist).href);
  const { startSandboxService, createRemoteEvaluator } = await import(new URL('service/index.js', dist).href);
  const n = quick ? 300 : 3000;
  const nService = quick ? 200 : 2000;
  const rows = [];

  const evaluator = await ScriptEvaluator.create();
  const service = await startSandboxService({ token: 'bench', workers: 2 });
  const remote = createRemoteEvaluator({ url: service.url, token: 'bench' });
  const context = vm.createContext({});
  try {
    for (const w of workloads()) {
      // Check every path gives the same output before timing it.
      const expected = evaluator.evaluate(w.source, w.input);
      if (!expected.ok) throw new Error(`${w.name}: ${expected.error.code} ${expected.error.message}`);
      const viaService = await remote.evaluate(w.source, w.input);
      if (!viaService.ok || viaService.output !== expected.output) throw new Error(`${w.name}: service output differs`);

      const inProcess = () => evaluator.evaluate(w.source, w.input);
      for (let i = 0; i < Math.min(200, n); i++) inProcess();
      let r = await timeSequential(n, inProcess);
      rows.push(summarise('quickjs in-process', w.name, r.samples, r.wallMs, 1));

      const remoteCall = () => remote.evaluate(w.source, w.input);
      for (let i = 0; i < 50; i++) await remoteCall();
      r = await timeSequential(nService, remoteCall);
      rows.push(summarise('quickjs service (http)', w.name, r.samples, r.wallMs, 1));
      r = await timeConcurrent(nService, 4, remoteCall);
      rows.push(summarise('quickjs service (http)', w.name, r.samples, r.wallMs, 4));

      // Baseline: compile the same wrapper per evaluation, JSON in and out, one reused context.
      const body = w.source.startsWith('(') ? `return (${w.source})(input)` : w.source;
      const nodeVm = () => {
        const fn = vm.runInContext(`(function (input) { "use strict"; ${body}\n})`, context);
        const out = JSON.stringify(fn(JSON.parse(w.input)));
        if (out !== expected.output) throw new Error('node:vm output differs');
      };
      for (let i = 0; i < 200; i++) nodeVm();
      r = await timeSequential(n, nodeVm);
      rows.push(summarise('node:vm (baseline, not a sandbox)', w.name, r.samples, r.wallMs, 1));
    }
  } finally {
    await remote.close();
    await service.close();
    evaluator.dispose();
  }
  return rows;
}

function printTable(rows) {
  const header = ['system', 'workload', 'conc', 'evals', 'evals/s', 'p50 µs', 'p99 µs'];
  const lines = rows.map((r) => [r.system, r.workload, String(r.concurrency), String(r.evaluations), String(r.evalsPerSec), String(r.p50Us), String(r.p99Us)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(fmt(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const l of lines) console.log(fmt(l));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const rows = await runSandboxBench({ quick: args.includes('--quick') });
  if (args.includes('--json')) console.log(JSON.stringify(rows, null, 2));
  else {
    console.log(`node ${process.version}, ${process.platform}/${process.arch}`);
    printTable(rows);
  }
}

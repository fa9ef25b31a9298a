// Measures the two componentize back-ends on the real engine: component size, compile +
// instantiate, time per activation, RSS, and the cost of a large payload crossing the boundary.
// Each back-end runs in its own child process, interleaved over several rounds.
//
//   node build.mjs --backend sm      # builds dist/component-sm/ next to dist/component/
//   node bench/backends/bench.mjs [--rounds N]
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { benchEngine, twoStepTemplate } from '../lib/engine.mjs';
import { fileURLToPath } from 'node:url';

const root = new URL('../../', import.meta.url);
const backends = { quickjs: 'dist/component/', sm: 'dist/component-sm/' };
const componentFile = { quickjs: 'dist/engine.wasm', sm: 'dist/engine-sm.wasm' };

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function child(backend) {
  if (backend === 'quickjs') setFlagsFromString('--experimental-wasm-extended-const');
  const dir = new URL(backends[backend], root);
  const rssBefore = process.memoryUsage().rss;
  const t0 = performance.now();
  const engine = await benchEngine(dir);
  const instantiateMs = performance.now() - t0;
  const rssInstantiated = process.memoryUsage().rss;
  const template = twoStepTemplate;
  const plan = engine.compile({ root: { template } });
  let n = 0;
  const runOnce = (input) => {
    const runId = `run-${n++}`;
    let out = engine.activate({ runId, now: 1_700_000_000_000 + n, facts: [{ type: 'run-requested', input, authority: { id: 'b', scopes: ['*'] } }], plan });
    let activations = 1;
    while (out.requests.length > 0) {
      out = engine.activate({ runId, now: 1_700_000_000_000 + n, facts: out.requests.map((r) => ({ type: 'capability-completed', invocationId: r.invocationId, ok: true, output: null })) });
      activations++;
    }
    if (out.summary.status !== 'completed') throw new Error(`run ended ${out.summary.status}`);
    return activations;
  };
  for (let i = 0; i < 200; i++) runOnce({});
  const samples = [];
  let activations = 0;
  for (let i = 0; i < 300; i++) {
    const t = performance.now();
    activations = runOnce({});
    samples.push((performance.now() - t) / activations);
  }
  const big = { text: 'x'.repeat(1_000_000) };
  runOnce(big);
  const bigSamples = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    engine.activate({ runId: `big-${i}`, now: 1, facts: [{ type: 'run-requested', input: big, authority: { id: 'b', scopes: ['*'] } }], plan });
    bigSamples.push(performance.now() - t);
  }
  const smallFirst = [];
  for (let i = 0; i < 50; i++) {
    const t = performance.now();
    engine.activate({ runId: `small-${i}`, now: 1, facts: [{ type: 'run-requested', input: {}, authority: { id: 'b', scopes: ['*'] } }], plan });
    smallFirst.push(performance.now() - t);
  }
  return {
    instantiateMs,
    activationMs: median(samples),
    payload1MBms: median(bigSamples) - median(smallFirst),
    rssInstantiatedMB: rssInstantiated / 1048576,
    rssAfterMB: process.memoryUsage().rss / 1048576,
    rssBeforeMB: rssBefore / 1048576,
  };
}

async function main() {
  const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 3;
  const available = Object.keys(backends).filter((b) => existsSync(new URL(`${backends[b]}engine.js`, root)));
  const results = Object.fromEntries(available.map((b) => [b, []]));
  for (let r = 0; r < rounds; r++) {
    for (const b of available) {
      const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', b], { encoding: 'utf8' });
      results[b].push(JSON.parse(out.trim().split('\n').pop()));
    }
  }
  const rows = available.map((b) => {
    const size = statSync(new URL(componentFile[b], root)).size;
    const coreBytes = readdirSync(new URL(backends[b], root)).filter((f) => f.endsWith('.wasm')).reduce((s, f) => s + statSync(new URL(backends[b] + f, root)).size, 0);
    const m = (k) => median(results[b].map((x) => x[k]));
    return { backend: b, componentBytes: size, coreModuleBytes: coreBytes, instantiateMs: m('instantiateMs'), activationMs: m('activationMs'), payload1MBms: m('payload1MBms'), rssInstantiatedMB: m('rssInstantiatedMB'), rssAfterMB: m('rssAfterMB') };
  });
  console.log(`| back-end | component | compile + instantiate | per activation (2-step run, median) | +1 MB payload in and out | RSS after instantiate | RSS after 500 runs |`);
  console.log(`| --- | --- | --- | --- | --- | --- | --- |`);
  for (const r of rows) {
    console.log(`| ${r.backend === 'sm' ? 'SpiderMonkey (componentize-js 0.23.0)' : 'QuickJS (componentize-qjs, jco 1.35.0)'} | ${(r.componentBytes / 1048576).toFixed(1)} MiB | ${r.instantiateMs.toFixed(0)} ms | ${(r.activationMs * 1000).toFixed(0)} µs | ${r.payload1MBms.toFixed(0)} ms | ${r.rssInstantiatedMB.toFixed(0)} MiB | ${r.rssAfterMB.toFixed(0)} MiB |`);
  }
  console.log(JSON.stringify({ rounds, rows }));
}

if (process.argv.includes('--child')) {
  console.log(JSON.stringify(await child(process.argv[process.argv.indexOf('--child') + 1])));
} else {
  await main();
}

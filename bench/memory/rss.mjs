// Memory of the Node host, measured the way users call it: `runtime.launch(template)` with a
// non-idempotent no-op tool on SQLite FULL. Each configuration runs in a fresh process, which
// runs 2-step runs (p50 latency), a fan-out of 1,000 items and a foreach over 10,000 items
// (concurrency 10), and reports the peak RSS (VmHWM) after each phase, the wasm linear memories,
// the V8 heap and a /proc/self/smaps breakdown.
//
//   node bench/memory/rss.mjs                     # the host's defaults
//   node bench/memory/rss.mjs --items 2000        # a smaller foreach
//   node bench/memory/rss.mjs --config default --config young-grow --config optimizing --config v8-defaults   # bench/README.md's table
//   node bench/memory/rss.mjs --node-flags="--optimize-for-size" --label ofs
//
// A configuration is a label, extra Node flags and extra environment (see `configs`). Not part of
// `npm test`; one configuration takes 10–30 s on a loaded 2-core machine.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fanOut, sequence } from '../lib/templates.mjs';

const configs = {
  // The lean settings the agent-workflow processes use (an embedding process opts in): the engine
  // compiled by Liftoff only, the young generation kept at its initial size
  // (hosts/shared/component.ts), SQLite's page cache 2 MiB (hosts/node/stores/sqlite/journal.ts). Every
  // configuration names both variables, so none depends on the SDK's own default
  // (optimizing + grow, the configuration `optimizing+young-grow`).
  default: { flags: [], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'young-grow': { flags: [], env: { AGENT_WORKFLOW_YOUNG_GEN: 'grow', AGENT_WORKFLOW_WASM_TIER: 'baseline' } },
  // Everything as before the memory work except the lazy undici: dynamic tiering, growing young
  // generation, better-sqlite3's 16 MiB page cache.
  'v8-defaults': { flags: [], env: { AGENT_WORKFLOW_WASM_TIER: 'optimizing', AGENT_WORKFLOW_YOUNG_GEN: 'grow' }, open: { sqliteCacheKiB: 16384 } },
  // V8's dynamic tiering (Liftoff, then TurboFan for hot functions).
  optimizing: { flags: [], env: { AGENT_WORKFLOW_WASM_TIER: 'optimizing', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'optimizing+young-grow': { flags: [], env: { AGENT_WORKFLOW_WASM_TIER: 'optimizing', AGENT_WORKFLOW_YOUNG_GEN: 'grow' } },
  'optimizing+semi-2': { flags: ['--max-semi-space-size=2'], env: { AGENT_WORKFLOW_WASM_TIER: 'optimizing', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'cache-16m+young-grow': { flags: [], env: { AGENT_WORKFLOW_YOUNG_GEN: 'grow', AGENT_WORKFLOW_WASM_TIER: 'baseline' }, open: { sqliteCacheKiB: 16384 } },
  // SQLite's page cache: the host's 2 MiB, the 16 MiB better-sqlite3 builds SQLite with, and 256 KiB.
  'cache-16m': { flags: [], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' }, open: { sqliteCacheKiB: 16384 } },
  'cache-256k': { flags: [], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' }, open: { sqliteCacheKiB: 256 } },
  'semi-2+cache-16m': { flags: ['--max-semi-space-size=2'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' }, open: { sqliteCacheKiB: 16384 } },
  'eager-wasm': { flags: ['--no-wasm-lazy-compilation'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'semi-1': { flags: ['--max-semi-space-size=1'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'semi-2': { flags: ['--max-semi-space-size=2'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'semi-growth-1': { flags: ['--semi-space-growth-factor=1'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'heap-growing-20': { flags: ['--heap-growing-percent=20'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'semi-2+old-80': { flags: ['--max-semi-space-size=2', '--max-old-space-size=80'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'optimize-for-size': { flags: ['--optimize-for-size'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  // The same flag set at run time, as a library can (node:v8 setFlagsFromString before the host loads).
  'optimize-for-size-runtime': { flags: ['--import', 'data:text/javascript,import v8 from "node:v8"; v8.setFlagsFromString("--optimize-for-size");'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'semi-growth-1-runtime': { flags: ['--import', 'data:text/javascript,import v8 from "node:v8"; v8.setFlagsFromString("--semi-space-growth-factor=1");'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  // What docs/hosts.md suggests for a process that must stay small.
  small: { flags: ['--optimize-for-size', '--max-semi-space-size=2'], env: { AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  // glibc malloc: fewer arenas, and freed memory given back sooner.
  'arena-2': { flags: [], env: { MALLOC_ARENA_MAX: '2', AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
  'malloc-trim': { flags: [], env: { MALLOC_ARENA_MAX: '2', MALLOC_TRIM_THRESHOLD_: '131072', MALLOC_MMAP_THRESHOLD_: '131072', AGENT_WORKFLOW_WASM_TIER: 'baseline', AGENT_WORKFLOW_YOUNG_GEN: 'fixed' } },
};

const mb = (bytes) => Math.round((bytes / 1048576) * 10) / 10;

function hwmMB() {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Math.round(Number(m[1]) / 102.4) / 10 : NaN;
}

function smapsBreakdown() {
  const cat = {};
  let cur;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const h = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (h) {
      const size = (parseInt(h[2], 16) - parseInt(h[1], 16)) / 1048576;
      const name = h[4] || '';
      cur = name.startsWith('/') ? `file:${name.split('/').pop()}` : name === '[heap]' ? 'malloc-heap' : size > 1024 ? 'wasm-memory' : h[3].includes('x') ? 'anon-exec' : name || 'anon';
      continue;
    }
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r && cur) cat[cur] = (cat[cur] ?? 0) + Number(r[1]) / 1024;
  }
  return Object.fromEntries(Object.entries(cat).filter(([, v]) => v >= 0.5).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Math.round(v * 10) / 10]));
}

async function child() {
  const opts = JSON.parse(process.env.RSS_BENCH_OPTS);
  // Record the linear memories of the component's core instances.
  const memories = [];
  const OrigInstance = WebAssembly.Instance;
  WebAssembly.Instance = function Instance(module, imports) {
    const inst = new OrigInstance(module, imports);
    for (const v of Object.values(inst.exports)) if (v instanceof WebAssembly.Memory) memories.push(v);
    return inst;
  };
  WebAssembly.Instance.prototype = OrigInstance.prototype;
  const origInstantiate = WebAssembly.instantiate;
  WebAssembly.instantiate = async (...args) => {
    const out = await origInstantiate(...args);
    const inst = out instanceof OrigInstance ? out : out.instance;
    for (const v of Object.values(inst.exports)) if (v instanceof WebAssembly.Memory) memories.push(v);
    return out;
  };
  const { WorkflowRuntime } = await import(new URL(`${opts.dist}/hosts/node/index.js`, import.meta.url).href);
  const dir = mkdtempSync(join(tmpdir(), 'adw-mem-'));
  const rt = await WorkflowRuntime.open({ ...opts.open, dir, tools: { noop: { execute: () => null } }, log: () => undefined });
  const run = async (t, input) => {
    const r = await (await rt.launch(t, { input })).result;
    if (r.status !== 'completed') throw new Error(`run ${r.status}: ${JSON.stringify(r.error)}`);
  };
  const phases = [];
  const snap = (phase, extra) => {
    const m = process.memoryUsage();
    phases.push({ phase, ...extra, hwmMB: hwmMB(), rssMB: mb(m.rss), heapUsedMB: mb(m.heapUsed), heapTotalMB: mb(m.heapTotal), externalMB: mb(m.external), wasmMemoriesMB: memories.map((x) => mb(x.buffer.byteLength)) });
  };
  snap('open');
  const two = sequence('seq2', 2);
  for (let i = 0; i < 20; i++) await run(two, {});
  const lat = [];
  let cpu0 = process.cpuUsage();
  for (let i = 0; i < opts.twoStepRuns; i++) {
    const a = performance.now();
    await run(two, {});
    lat.push(performance.now() - a);
  }
  lat.sort((a, b) => a - b);
  const cpuMs = (c) => (c.user + c.system) / 1000;
  snap('two-step', { p50Ms: Math.round(lat[lat.length >> 1] * 100) / 100, cpuMsPerRun: Math.round((cpuMs(process.cpuUsage(cpu0)) / opts.twoStepRuns) * 100) / 100 });
  const f1 = fanOut('fan', 10, 1000);
  const items1k = Array.from({ length: 1000 }, (_, i) => i);
  await run(f1, { items: items1k });
  let a = performance.now();
  cpu0 = process.cpuUsage();
  await run(f1, { items: items1k });
  snap('fan-out-1000', { ms: Math.round(performance.now() - a), cpuMs: Math.round(cpuMs(process.cpuUsage(cpu0))) });
  if (opts.items > 0) {
    a = performance.now();
    cpu0 = process.cpuUsage();
    await run(fanOut('each', 10, opts.items), { items: Array.from({ length: opts.items }, (_, i) => i) });
    snap(`foreach-${opts.items}`, { ms: Math.round(performance.now() - a), cpuMs: Math.round(cpuMs(process.cpuUsage(cpu0))) });
  }
  const smaps = smapsBreakdown();
  const v8 = await import('node:v8');
  const heapSpaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, mb(s.physical_space_size)]));
  const regions = [];
  let cur;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const h = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (h) cur = { sizeMB: mb(parseInt(h[2], 16) - parseInt(h[1], 16)), perms: h[3], name: h[4] || '[anon]' };
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r && cur && Number(r[1]) >= 1024) regions.push({ ...cur, rssMB: mb(Number(r[1]) * 1024) });
  }
  await rt.close();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(JSON.stringify({ phases, smaps, heapSpaces, regions, execArgv: process.execArgv }) + '\n');
}

function parseArgs(argv) {
  const out = { configs: [], items: 10000, twoStepRuns: 200, nodeFlags: [], label: undefined, json: false };
  for (let i = 0; i < argv.length; i++) {
    const [k, v] = argv[i].includes('=') ? [argv[i].slice(0, argv[i].indexOf('=')), argv[i].slice(argv[i].indexOf('=') + 1)] : [argv[i], undefined];
    const val = () => v ?? argv[++i];
    if (k === '--config') out.configs.push(val());
    else if (k === '--items') out.items = Number(val());
    else if (k === '--two-step-runs') out.twoStepRuns = Number(val());
    else if (k === '--node-flags') out.nodeFlags.push(...val().split(/\s+/).filter(Boolean));
    else if (k === '--label') out.label = val();
    else if (k === '--json') out.json = true;
    else if (k === '--detail') out.detail = true;
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const dist = fileURLToPath(new URL('../../dist', import.meta.url));
  const list = args.nodeFlags.length ? [{ name: args.label ?? args.nodeFlags.join(' '), flags: args.nodeFlags, env: {} }] : (args.configs.length ? args.configs : ['default']).map((name) => {
    if (!configs[name]) throw new Error(`unknown configuration ${name}; known: ${Object.keys(configs).join(', ')}`);
    return { name, ...configs[name] };
  });
  for (const c of list) {
    const load0 = loadavg()[0];
    const out = await new Promise((resolve, reject) => {
      const p = spawn(process.execPath, [...c.flags, fileURLToPath(import.meta.url), '--child'], {
        env: { ...process.env, ...c.env, RSS_BENCH_OPTS: JSON.stringify({ dist, items: args.items, twoStepRuns: args.twoStepRuns, open: c.open ?? {} }) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let text = '';
      p.stdout.on('data', (d) => (text += d));
      p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(text.trim().split('\n').pop())) : reject(new Error(`${c.name}: child exited ${code}`))));
    });
    const load = `${load0.toFixed(1)}–${loadavg()[0].toFixed(1)}`;
    if (args.json) {
      console.log(JSON.stringify({ config: c.name, load, ...out }));
      continue;
    }
    console.log(`== ${c.name} (${[...c.flags, ...Object.entries(c.env).map(([k, v]) => `${k}=${v}`), ...Object.entries(c.open ?? {}).map(([k, v]) => `open ${k}: ${v}`)].join(' ') || 'no extra flags'}; load ${load})`);
    for (const p of out.phases) {
      const fig = p.p50Ms !== undefined ? `p50 ${p.p50Ms} ms, cpu ${p.cpuMsPerRun} ms/run` : p.ms !== undefined ? `${p.ms} ms, cpu ${p.cpuMs} ms` : '';
      console.log(`  ${p.phase.padEnd(14)} ${fig.padEnd(30)} peak ${String(p.hwmMB).padStart(6)} MB  rss ${String(p.rssMB).padStart(6)}  heap ${p.heapUsedMB}/${p.heapTotalMB}  external ${p.externalMB}  wasm memories ${p.wasmMemoriesMB.join('+')} MB`);
    }
    if (args.detail) {
      console.log(`  V8 heap spaces (physical MB): ${Object.entries(out.heapSpaces).map(([k, v]) => `${k} ${v}`).join(', ')}`);
      for (const r of out.regions) console.log(`  region ${String(r.rssMB).padStart(6)} MB of ${String(r.sizeMB).padStart(8)} ${r.perms} ${r.name}`);
    }
    console.log(`  smaps at end: ${Object.entries(out.smaps).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  }
}

if (process.argv.includes('--child')) await child();
else await main();

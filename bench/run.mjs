#!/usr/bin/env node
// Side-by-side benchmark runner: `npm run bench` (BENCH_QUICK=1 for a ~1 minute smoke run).
// Loads every system module in bench/systems/ (interface: bench/systems/README.md), runs each
// workload after a warm-up, interleaved A B C A B C, and writes bench/results/latest.{json,md,svg}.
// Never fails a build: a system that fails is reported and the run goes on; exit code 0.
import { readdirSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir, cpus, totalmem, release, platform, arch, loadavg } from 'node:os';
import { spawn, execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { BENCH_DIR, ROOT_DIR, mainThreadCpuMs, stats, withTimeout } from './lib/util.mjs';
import { analyse, renderMarkdown, renderSvg, WORKLOADS } from './lib/report.mjs';

const env = process.env;
const QUICK = env.BENCH_QUICK === '1' || env.BENCH_QUICK === 'true';
const int = (v, d) => (v != null && v !== '' && Number.isFinite(Number(v)) ? Number(v) : d);

const cfg = {
  quick: QUICK,
  rounds: int(env.BENCH_ROUNDS, QUICK ? 2 : 5),
  twoStepBatch: QUICK ? 10 : 40,
  twoStepWarmup: QUICK ? 5 : 20,
  hundredStepBatch: QUICK ? 1 : 3,
  steps: 100,
  throughputSeconds: int(env.BENCH_THROUGHPUT_SECONDS, QUICK ? 1 : 10),
  throughputRounds: int(env.BENCH_THROUGHPUT_ROUNDS, QUICK ? 1 : 3),
  inFlight: 16,
  fanOutItems: int(env.BENCH_FANOUT_ITEMS, QUICK ? 200 : 1000),
  fanOutConcurrency: 10,
  fanOutRounds: int(env.BENCH_ROUNDS, QUICK ? 1 : 5),
  foreachItems: int(env.BENCH_FOREACH_ITEMS, QUICK ? 500 : 10000),
  foreachRounds: int(env.BENCH_FOREACH_ROUNDS, QUICK ? 1 : 3),
  replayEvents: int(env.BENCH_REPLAY_EVENTS, QUICK ? 300 : 10000),
  replayRounds: int(env.BENCH_REPLAY_ROUNDS, QUICK ? 1 : 3),
  coldStartRounds: int(env.BENCH_COLD_ROUNDS, QUICK ? 1 : 5),
  callTimeoutMs: int(env.BENCH_CALL_TIMEOUT_MS, QUICK ? 120_000 : 600_000),
  only: env.BENCH_SYSTEMS ? env.BENCH_SYSTEMS.split(',').map((s) => s.trim()).filter(Boolean) : null,
};

const log = (...a) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}]`, ...a);
const SYSTEMS_DIR = join(BENCH_DIR, 'systems');
const RESULTS_DIR = join(BENCH_DIR, 'results');
const LOAD_AT_START = loadavg().map((x) => Math.round(x * 100) / 100);
const scratch = mkdtempSync(join(tmpdir(), 'agent-dag-bench-'));

function machine() {
  let commit;
  try { commit = execFileSync('git', ['-C', ROOT_DIR, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(); } catch { /* not a checkout */ }
  const c = cpus();
  return {
    date: new Date().toISOString(),
    cpuCount: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    os: `${platform()} ${release()} ${arch()}`,
    tmpdir: tmpdir(),
    loadAverageAtStart: LOAD_AT_START,
    loadAverageAtEnd: loadavg().map((x) => Math.round(x * 100) / 100),
    commit,
  };
}

// ---------------------------------------------------------------- loading
async function loadSystems() {
  const files = readdirSync(SYSTEMS_DIR)
    .filter((f) => f.endsWith('.mjs') && f !== 'floors.mjs' && !f.startsWith('_'))
    .sort();
  const systems = [];
  for (const f of files) {
    const file = join(SYSTEMS_DIR, f);
    const entry = { file: `bench/systems/${f}`, path: file, name: f.replace(/\.mjs$/, ''), kind: 'peer', status: 'ok' };
    try {
      const mod = (await import(pathToFileURL(file).href)).default;
      if (!mod || typeof mod !== 'object' || !mod.workloads) throw new Error('default export is not a system module ({ name, workloads, ... })');
      entry.mod = mod;
      entry.name = mod.name ?? entry.name;
      entry.kind = mod.kind === 'product' ? 'product' : 'peer';
    } catch (e) {
      entry.status = 'load-error';
      entry.error = String(e?.message ?? e);
    }
    if (cfg.only && !cfg.only.includes(entry.name)) continue;
    systems.push(entry);
  }
  // The product first, then the peers in file order.
  return systems.sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'product' ? -1 : 1));
}

function describe(sys) {
  const get = (k) => { try { return sys.mod?.[k]; } catch (e) { return `(error: ${e.message})`; } };
  return {
    name: sys.name, file: sys.file, kind: sys.kind, status: sys.status, error: sys.error,
    version: get('version') ?? '?', durability: get('durability') ?? '?',
  };
}

// ---------------------------------------------------------------- results
const results = { workloads: {} };
for (const w of WORKLOADS) results.workloads[w.id] = {};

function record(wid, sys, patch) {
  const cur = (results.workloads[wid][sys.name] ??= { status: 'ok', samples: [] });
  Object.assign(cur, patch);
  return cur;
}
function fail(wid, sys, e) {
  log(`  ${sys.name} ${wid}: ERROR ${String(e?.message ?? e).split('\n')[0]}`);
  record(wid, sys, { status: 'error', error: String(e?.message ?? e).slice(0, 1000) });
}
const failed = (wid, sys) => results.workloads[wid][sys.name]?.status === 'error';

function naReason(sys, wid) {
  if (sys.status !== 'ok') return null;
  const fn = sys.mod.workloads?.[wid];
  if (wid === 'throughput16') {
    if (typeof sys.mod.workloads?.throughput16 === 'function' || typeof sys.mod.workloads?.twoStep === 'function') return null;
    return sys.mod.na?.throughput16 ?? sys.mod.na?.twoStep ?? 'no 2-step workload';
  }
  if (typeof fn === 'function') return null;
  return sys.mod.na?.[wid] ?? 'not implemented by this system module';
}

// ---------------------------------------------------------------- child workloads
function runChild(sys, wid, params) {
  return new Promise((resolve) => {
    const dir = mkdtempSync(join(scratch, `${sys.name}-${wid}-`));
    const child = spawn(process.execPath, [join(BENCH_DIR, 'lib', 'child.mjs'), sys.path, wid, JSON.stringify(params), dir], {
      env: { ...env, BENCH_CHILD: '1' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; if (out.length > 1e6) out = out.slice(-5e5); });
    child.stderr.on('data', (d) => { err += d; if (err.length > 1e5) err = err.slice(-5e4); });
    const timer = setTimeout(() => child.kill('SIGKILL'), cfg.callTimeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      const ok = /@@BENCH_RESULT (.*)/.exec(out);
      if (ok) return resolve({ ok: true, value: JSON.parse(ok[1]) });
      const bad = /@@BENCH_ERROR (.*)/.exec(out);
      resolve({ ok: false, error: bad ? JSON.parse(bad[1]) : `child exited ${code ?? signal}: ${err.slice(-800)}` });
    });
  });
}

async function childWorkload(systems, wid, params, rounds) {
  const active = systems.filter((s) => s.status === 'ok' && !naReason(s, wid));
  for (const s of systems) { const r = naReason(s, wid); if (r) record(wid, s, { status: 'na', reason: r }); }
  if (!active.length) return;
  log(`${wid}: ${rounds} round(s) in child processes, ${JSON.stringify(params)}`);
  for (let r = 0; r < rounds; r++) {
    for (const s of active) {
      if (failed(wid, s)) continue;
      const res = await runChild(s, wid, params);
      if (!res.ok) { fail(wid, s, res.error); continue; }
      const cur = record(wid, s, {});
      cur.samples.push(res.value.ms);
      (cur.runs ??= []).push(res.value);
      log(`  ${s.name} ${wid}: ${res.value.ms.toFixed(1)} ms${res.value.peakRssMB ? `, peak RSS ${res.value.peakRssMB} MB` : ''}`);
    }
  }
}

// ---------------------------------------------------------------- in-process workloads
/** On-CPU time of the main thread in ms since `from` (a `mainThreadCpuMs()`); undefined where it cannot be read. */
const cpuMsSince = (from) => (from === undefined ? undefined : mainThreadCpuMs() - from);

async function timed(fn, arg) {
  const c0 = mainThreadCpuMs();
  const t0 = performance.now();
  const r = await withTimeout(Promise.resolve().then(() => fn(arg)), cfg.callTimeoutMs, 'workload call');
  // The main thread's CPU only: a server a system talks to (PostgreSQL, restate-server) is not in it.
  return { ms: r?.ms ?? performance.now() - t0, wallMs: performance.now() - t0, cpuMs: cpuMsSince(c0), events: r?.events, extra: r?.extra };
}

async function inProcess(systems, wid, { params, warmup, batch, rounds, sample, cpuSample }) {
  const active = systems.filter((s) => s.status === 'ok' && !naReason(s, wid));
  for (const s of systems) { const r = naReason(s, wid); if (r && s.status === 'ok') record(wid, s, { status: 'na', reason: r }); }
  if (!active.length) return;
  log(`${wid}: warm-up ${warmup}, ${rounds} round(s) × ${batch}, interleaved`);
  for (const s of active) {
    try { for (let i = 0; i < warmup; i++) await timed(s.mod.workloads[wid], params); } catch (e) { fail(wid, s, e); }
  }
  for (let r = 0; r < rounds; r++) {
    for (const s of active) {
      if (failed(wid, s)) continue;
      try {
        const cur = record(wid, s, {});
        for (let i = 0; i < batch; i++) {
          const t = await timed(s.mod.workloads[wid], params);
          cur.samples.push(sample ? sample(t) : t.ms);
          if (t.cpuMs !== undefined) (cur.cpu ??= []).push(cpuSample ? cpuSample(t) : t.cpuMs);
          if (t.extra) (cur.extras ??= []).push(t.extra);
        }
      } catch (e) { fail(wid, s, e); }
    }
  }
  for (const s of active) {
    const cur = results.workloads[wid][s.name];
    if (cur?.status === 'ok') { const st = stats(cur.samples); log(`  ${s.name} ${wid}: median ${st?.median.toFixed(3)}`); }
  }
}

async function throughputWindow(sys) {
  const w = sys.mod.workloads;
  const c0 = mainThreadCpuMs();
  if (typeof w.throughput16 === 'function') {
    const r = await withTimeout(w.throughput16({ seconds: cfg.throughputSeconds, inFlight: cfg.inFlight }), cfg.callTimeoutMs, 'throughput');
    return { perSecond: (r.runs / r.ms) * 1000, cpuMsPerRun: cpuMsSince(c0) / r.runs };
  }
  const start = performance.now();
  const end = start + cfg.throughputSeconds * 1000;
  let runs = 0;
  await withTimeout(Promise.all(Array.from({ length: cfg.inFlight }, async () => {
    while (performance.now() < end) { await w.twoStep(); runs++; }
  })), cfg.callTimeoutMs + cfg.throughputSeconds * 1000, 'throughput');
  return { perSecond: (runs / (performance.now() - start)) * 1000, cpuMsPerRun: cpuMsSince(c0) / runs };
}

async function throughput(systems) {
  const wid = 'throughput16';
  const active = systems.filter((s) => s.status === 'ok' && !naReason(s, wid));
  for (const s of systems) { const r = naReason(s, wid); if (r && s.status === 'ok') record(wid, s, { status: 'na', reason: r }); }
  log(`${wid}: ${cfg.inFlight} in flight, ${cfg.throughputRounds} window(s) of ${cfg.throughputSeconds} s per system, interleaved`);
  for (let r = 0; r < cfg.throughputRounds; r++) {
    for (const s of active) {
      if (failed(wid, s)) continue;
      try {
        const { perSecond: v, cpuMsPerRun } = await throughputWindow(s);
        const cur = record(wid, s, {});
        cur.samples.push(v);
        if (Number.isFinite(cpuMsPerRun)) (cur.cpu ??= []).push(cpuMsPerRun);
        log(`  ${s.name} ${wid}: ${v.toFixed(0)} runs/s${Number.isFinite(cpuMsPerRun) ? `, ${cpuMsPerRun.toFixed(3)} main-thread CPU ms per run` : ''}`);
      } catch (e) { fail(wid, s, e); }
    }
  }
}

// ---------------------------------------------------------------- floors and extra rows
async function measureFloors() {
  const out = [];
  let floors = [];
  try {
    floors = (await import(pathToFileURL(join(SYSTEMS_DIR, 'floors.mjs')).href)).default;
  } catch (e) {
    return [{ id: 'floors', label: 'floors module', status: 'error', error: String(e?.message ?? e) }];
  }
  for (const f of floors) {
    if (typeof f.measure !== 'function') { out.push({ id: f.id, label: f.label, unit: f.unit, status: 'na', reason: f.reason ?? 'not measured' }); continue; }
    try {
      const r = await f.measure({ quick: QUICK, tmpDir: scratch });
      if (!r) { out.push({ id: f.id, label: f.label, status: 'na', reason: f.reason ?? 'not measured' }); continue; }
      const st = stats(r.samplesMs);
      out.push({ id: f.id, label: f.label, unit: f.unit ?? 'ms', status: 'ok', version: r.version, ...st });
      log(`floor ${f.id}: median ${st.median.toFixed(4)} ms, p99 ${st.p99.toFixed(4)} ms`);
    } catch (e) {
      out.push({ id: f.id, label: f.label, status: 'error', error: String(e?.message ?? e) });
      log(`floor ${f.id}: ERROR ${e?.message ?? e}`);
    }
  }
  return out;
}

// Benchmarks of single areas that live next to their code; each exports a function returning rows.
const extraModules = [
  // Engine instructions per activation under callgrind (needs valgrind; about a minute a pair).
  ['instructions/bench.mjs', 'runInstructionsBench'],
  // runtime.compile of a 4-node template, and how often repeated launch(template) compiles.
  ['compile/bench.mjs', 'runCompileBench'],
  ['sandbox/bench.mjs', 'runSandboxBench'],
  ['durability/bench.mjs', 'runDurabilityBench'],
  ['router/bench.mjs', 'runRouterBench'],
  // Queue drained by 1, 2 and 4 serve processes on PostgreSQL and 1 on SQLite; claim-to-start latency.
  ['workers/bench.mjs', 'runWorkersBench', { runs: 2000, samples: 50 }, { runs: 300, samples: 10 }],
  // Bounded for the main run (its own CLI runs 200 and 50,000 items too): the 100,000-event
  // export costs minutes to record and replay on a 2-core machine.
  ['browser/bench.mjs', 'runBrowserBench', { items: [100, 5000], repeat: 3, large: true, largeRepeat: 1 }, { items: [100], repeat: 1, large: false }],
];

async function extraRows() {
  const extras = [];
  for (const [rel, fn, fullOptions = {}, quickOptions = fullOptions] of extraModules) {
    const file = join(BENCH_DIR, rel);
    if (!existsSync(file)) continue;
    const source = `bench/${rel}`;
    try {
      const mod = await import(pathToFileURL(file).href);
      if (typeof mod[fn] !== 'function') throw new Error(`${source} does not export ${fn}()`);
      log(`${source}: ${fn}()`);
      const rows = await withTimeout(Promise.resolve(mod[fn]({ quick: QUICK, ...(QUICK ? quickOptions : fullOptions) })), cfg.callTimeoutMs, fn);
      extras.push({ source, status: 'ok', rows });
    } catch (e) {
      extras.push({ source, status: 'error', error: String(e?.stack ?? e).slice(0, 1000) });
      log(`${source}: ERROR ${e?.message ?? e}`);
    }
  }
  return extras;
}

// ---------------------------------------------------------------- main
async function main() {
  const t0 = Date.now();
  log(`agent-dag-workflow bench${QUICK ? ' (BENCH_QUICK)' : ''}; scratch ${scratch}`);
  const systems = await loadSystems();
  for (const s of systems) log(`system ${s.name}: ${s.status}${s.error ? ` (${s.error})` : ''}`);

  const floors = await measureFloors();

  // Fresh-process workloads first, while no system runs in this process.
  await childWorkload(systems, 'coldStart', {}, cfg.coldStartRounds);
  await childWorkload(systems, 'foreach10k', { items: cfg.foreachItems, concurrency: cfg.fanOutConcurrency }, cfg.foreachRounds);

  for (const s of systems.filter((x) => x.status === 'ok')) {
    try {
      const dir = mkdtempSync(join(scratch, `${s.name}-`));
      const t = performance.now();
      await withTimeout(Promise.resolve(s.mod.setup({ tmpDir: dir, quick: QUICK, params: cfg, child: false })), 180_000, 'setup');
      log(`setup ${s.name}: ${(performance.now() - t).toFixed(0)} ms`);
    } catch (e) {
      s.status = 'setup-error';
      s.error = String(e?.message ?? e).slice(0, 1000);
      log(`setup ${s.name}: ERROR ${s.error}`);
    }
  }

  await inProcess(systems, 'twoStep', { params: {}, warmup: cfg.twoStepWarmup, batch: cfg.twoStepBatch, rounds: cfg.rounds });
  await inProcess(systems, 'hundredStep', {
    params: { steps: cfg.steps }, warmup: 1, batch: cfg.hundredStepBatch, rounds: cfg.rounds,
    sample: (t) => t.ms / cfg.steps, cpuSample: (t) => t.cpuMs / cfg.steps,
  });
  await throughput(systems);
  await inProcess(systems, 'fanOut1000', {
    params: { items: cfg.fanOutItems, concurrency: cfg.fanOutConcurrency }, warmup: QUICK ? 0 : 1, batch: 1, rounds: cfg.fanOutRounds,
  });
  await inProcess(systems, 'replay10k', {
    params: { events: cfg.replayEvents }, warmup: 1, batch: 1, rounds: cfg.replayRounds,
    sample: (t) => ((t.events ?? cfg.replayEvents) / t.ms) * 1000,
  });

  const extras = await extraRows();

  for (const s of systems.filter((x) => x.status === 'ok' || x.status === 'setup-error')) {
    try { await withTimeout(Promise.resolve(s.mod.teardown?.()), 30_000, 'teardown'); } catch (e) { log(`teardown ${s.name}: ${e.message}`); }
  }

  const doc = {
    machine: machine(),
    config: cfg,
    durationSeconds: Math.round((Date.now() - t0) / 1000),
    systems: systems.map(describe),
    floors,
    workloads: {},
    extras,
  };
  for (const w of WORKLOADS) {
    doc.workloads[w.id] = { label: w.label, unit: w.unit, better: w.better, systems: {} };
    for (const s of systems) {
      const r = results.workloads[w.id][s.name];
      if (!r) {
        const why = s.status !== 'ok' ? `system ${s.status}: ${s.error}` : 'not run';
        doc.workloads[w.id].systems[s.name] = { status: s.status === 'ok' ? 'na' : 'error', reason: why };
        continue;
      }
      const { samples, cpu, ...rest } = r;
      const entry = { ...rest, ...(r.status === 'ok' ? stats(samples) : {}), note: s.mod?.notes?.[w.id] };
      // Main-thread CPU of the benchmark's process per call (per run for throughput, per step for the 100-step run).
      if (r.status === 'ok' && cpu?.length) entry.cpuMs = stats(cpu);
      if (w.id === 'foreach10k' && r.runs) {
        entry.peakRssMB = stats(r.runs.map((x) => x.peakRssMB));
        entry.rssAfterSetupMB = stats(r.runs.map((x) => x.rssAfterSetupMB));
        const srv = r.runs.map((x) => x.extra?.serverPeakRssMB).filter((x) => x != null);
        if (srv.length) entry.serverPeakRssMB = stats(srv);
      }
      if (w.id === 'coldStart' && r.runs) {
        entry.sinceProcessStartMs = stats(r.runs.map((x) => x.sinceProcessStartMs));
        // The figure (`ms`) runs from the process's start; the part before the workload began:
        const before = r.runs.map((x) => x.processStartMs).filter((x) => x != null);
        if (before.length) entry.processStartMs = stats(before);
        // Where a fresh process's time goes, for a system that reports its phases.
        const phases = r.runs.map((x) => x.extra?.phasesMs).filter(Boolean);
        if (phases.length) entry.phasesMs = Object.fromEntries(Object.keys(phases[0]).map((k) => [k, stats(phases.map((p) => p[k])).median]));
      }
      if (r.status === 'ok') entry.samples = samples.map((x) => Math.round(x * 10000) / 10000);
      if (r.status === 'ok' && !entry.n) Object.assign(entry, { status: 'error', error: 'no samples' });
      doc.workloads[w.id].systems[s.name] = entry;
    }
  }

  analyse(doc);
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, 'latest.json'), JSON.stringify(doc, null, 2) + '\n');
  writeFileSync(join(RESULTS_DIR, 'latest.md'), renderMarkdown(doc));
  writeFileSync(join(RESULTS_DIR, 'latest.svg'), renderSvg(doc));
  log(`wrote bench/results/latest.{json,md,svg} in ${doc.durationSeconds} s`);
}

try {
  await main();
} catch (e) {
  console.error('bench runner failed:', e);
  rmSync(scratch, { recursive: true, force: true });
  process.exit(1);
}
rmSync(scratch, { recursive: true, force: true });
process.exit(0);

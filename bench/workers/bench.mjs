#!/usr/bin/env node
// Workers benchmark: 2-step runs/s drained from the durable queue by 1, 2 and 4 `agent-workflow
// serve` processes on PostgreSQL and by 1 on SQLite (a temp file), and the claim-to-start latency
// of a queued run while a worker is idle. N runs are enqueued first, then the workers start; the
// time counts from their spawn to the last run completed (worker start-up included). Latency: one run enqueued at a time,
// from the return of the enqueue (committed) to the `occurredAt` of its `run.accepted`.
// Prints a table; never asserts. Imports the built package: run `node build.mjs` first.
//
//   node bench/workers/bench.mjs [--json]      BENCH_QUICK=1: 300 runs, 10 latency samples
//   BENCH_WORKERS_RUNS=N  BENCH_WORKERS_LATENCY=K  BENCH_PG_URL=postgresql://user@host:port/db
//   BENCH_WORKERS_ONLY=throughput|latency: one of the two sections
//   BENCH_WORKERS_PROFILE=<dir>: the single PostgreSQL worker runs with --cpu-prof into <dir>
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = join(root, 'dist/hosts/node/cli/main.js');
const hostModule = fileURLToPath(new URL('./host.mjs', import.meta.url));
const pgBase = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const targets = { runsPerSec4Pg: 1000, latencyP50Ms: 5 };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

const template = {
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: 'bench-workers-two-step' },
  spec: {
    requires: ['tool:a', 'tool:b'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'a', uses: 'tool.call@1', config: { tool: 'a' } },
      { id: 'b', uses: 'tool.call@1', config: { tool: 'b' } },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [
      { from: 'start', to: 'a' },
      { from: 'a', to: 'b' },
      { from: 'b', to: 'end' },
    ],
  },
};

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** A fresh store: a PostgreSQL schema of its own, or a SQLite file in a temp dir. */
async function freshStore(kind, dir) {
  if (kind === 'sqlite') {
    const file = join(dir, 'workflow.db');
    let db;
    return {
      location: file,
      completed: () => (db ??= new Database(file, { readonly: true, fileMustExist: true })).prepare("SELECT count(*) AS n FROM runs WHERE status = 'completed'").get().n,
      firstEvent: (runId) => {
        // The row that holds seq 1: a commit's events share a row (schema v9), seq 1 is its first line.
        const row = (db ??= new Database(file, { readonly: true, fileMustExist: true })).prepare('SELECT body FROM events WHERE run_id = ? ORDER BY seq LIMIT 1').get(runId);
        return row ? JSON.parse(Buffer.from(row.body).toString('utf8').split('\n')[0]) : undefined;
      },
      drop: async () => db?.close(),
    };
  }
  const schema = `bench_workers_${process.pid}_${Date.now() % 1_000_000}`;
  const client = new pg.Client({ connectionString: pgBase });
  await client.connect();
  return {
    location: `${pgBase}?schema=${schema}`,
    completed: async () => Number((await client.query(`SELECT count(*) AS n FROM ${schema}.runs WHERE status = 'completed'`)).rows[0].n),
    firstEvent: async (runId) => {
      const r = await client.query(`SELECT body FROM ${schema}.events WHERE run_id = $1 AND seq = 1`, [runId]);
      return r.rows[0] ? JSON.parse(Buffer.from(r.rows[0].body).toString('utf8')) : undefined;
    },
    drop: async () => {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    },
  };
}

function startWorker(store, dir, { profileDir } = {}) {
  const args = [...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), cli, 'serve', '--store', store.location, '--config', hostModule, '--dir', dir];
  const child = spawn(process.execPath, args, { cwd: dir, env: { ...process.env, STATE_DIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let servingAt;
  child.stdout.on('data', (d) => {
    stdout += d;
    if (servingAt === undefined && stdout.includes('"Serving"')) servingAt = performance.now();
  });
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-20_000)));
  const closed = new Promise((r) => child.on('close', (code, signal) => r({ code, signal })));
  return {
    child,
    servingAt: () => servingAt,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await closed;
      clearTimeout(t);
      const last = stdout.trim().split('\n').filter(Boolean).map((l) => { try { return JSON.parse(l); } catch { return undefined; } }).filter(Boolean).pop();
      return last;
    },
  };
}

async function enqueue(rt, plan, n) {
  const ids = [];
  for (let i = 0; i < n; i += 100) {
    const batch = await Promise.all(Array.from({ length: Math.min(100, n - i) }, (_, k) => rt.launch({ type: 'plan', plan }, { executionMode: 'background', input: { n: i + k } })));
    ids.push(...batch.map((h) => h.runId));
  }
  return ids;
}

/** N queued runs, then `workers` processes; runs/s from their spawn to the last completion. */
async function throughput(kind, workers, runs, { timeoutMs, profileDir }) {
  const dir = mkdtempSync(join(tmpdir(), `bench-workers-${kind}-${workers}-`));
  const store = await freshStore(kind, dir);
  const rt = await WorkflowRuntime.open({ store: store.location, dir, tools: { a: async () => ({ a: true }), b: async () => ({ b: true }) }, log: () => undefined });
  const procs = [];
  try {
    const plan = await rt.compile(template);
    const e0 = performance.now();
    await enqueue(rt, plan, runs);
    const enqueueMs = performance.now() - e0;
    await rt.close();
    const t0 = performance.now();
    for (let i = 0; i < workers; i++) procs.push(startWorker(store, dir, i === 0 ? { profileDir } : {}));
    const deadline = Date.now() + timeoutMs;
    let done = 0;
    while ((done = await store.completed()) < runs) {
      if (Date.now() > deadline) throw new Error(`${done} of ${runs} runs completed after ${timeoutMs} ms`);
      await sleep(20);
    }
    const ms = performance.now() - t0;
    const stats = await Promise.all(procs.map((p) => p.stop()));
    const started = stats.reduce((a, s) => a + (s?.started ?? 0), 0);
    const takenOver = stats.reduce((a, s) => a + (s?.takenOver ?? 0), 0);
    return {
      section: 'throughput',
      store: kind === 'pg' ? 'PostgreSQL' : 'SQLite',
      workers,
      runs,
      enqueueRunsPerSec: Math.round((runs / enqueueMs) * 1000),
      seconds: +(ms / 1000).toFixed(2),
      runsPerSec: +((runs / ms) * 1000).toFixed(1),
      starts: started,
      takeovers: takenOver,
      target: kind === 'pg' && workers === 4 ? `≥ ${targets.runsPerSec4Pg} runs/s` : '',
      loadAverage: load(),
      cores: cpus().length,
    };
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await rt.close().catch(() => undefined);
    await store.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One run enqueued at a time while a worker idles: enqueue committed -> run.accepted occurredAt. */
async function latency(kind, samples) {
  const dir = mkdtempSync(join(tmpdir(), `bench-workers-latency-${kind}-`));
  const store = await freshStore(kind, dir);
  const rt = await WorkflowRuntime.open({ store: store.location, dir, tools: { a: async () => ({ a: true }), b: async () => ({ b: true }) }, log: () => undefined });
  const worker = startWorker(store, dir);
  try {
    const plan = await rt.compile(template);
    while (worker.servingAt() === undefined) {
      if (worker.child.exitCode !== null) throw new Error(`worker exited: ${worker.stderr()}`);
      await sleep(20);
    }
    const warm = await enqueue(rt, plan, 3);
    for (const id of warm) while (!(await store.firstEvent(id))) await sleep(5);
    const ms = [];
    for (let i = 0; i < samples; i++) {
      await sleep(100 + Math.random() * 100); // idle worker, random phase against its poll
      const h = await rt.launch({ type: 'plan', plan }, { executionMode: 'background', input: { i } });
      const committed = Date.now();
      const deadline = committed + 10_000;
      let first;
      while (!(first = await store.firstEvent(h.runId))) {
        if (Date.now() > deadline) throw new Error(`run ${h.runId} not started within 10 s`);
        await sleep(2);
      }
      ms.push(Date.parse(first.occurredAt) - committed);
    }
    ms.sort((a, b) => a - b);
    return {
      section: 'claim-to-start',
      store: kind === 'pg' ? 'PostgreSQL' : 'SQLite',
      workers: 1,
      samples,
      p50Ms: percentile(ms, 50),
      p95Ms: percentile(ms, 95),
      maxMs: ms[ms.length - 1],
      target: `p50 ≤ ${targets.latencyP50Ms} ms`,
      loadAverage: load(),
      cores: cpus().length,
    };
  } finally {
    await worker.stop();
    await rt.close();
    await store.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runWorkersBench(options = {}) {
  const quick = options.quick ?? process.env.BENCH_QUICK === '1';
  const runs = Number(process.env.BENCH_WORKERS_RUNS ?? options.runs ?? (quick ? 300 : 2000));
  const samples = Number(process.env.BENCH_WORKERS_LATENCY ?? options.samples ?? (quick ? 10 : 50));
  const timeoutMs = options.timeoutMs ?? 300_000;
  const profileDir = process.env.BENCH_WORKERS_PROFILE;
  const rows = [];
  const attempt = async (label, fn) => {
    try {
      const row = await fn();
      rows.push(row);
      console.error(`[workers bench] ${label}: ${JSON.stringify(row)}`);
    } catch (err) {
      rows.push({ section: label, error: String(err?.message ?? err).slice(0, 500), loadAverage: load(), cores: cpus().length });
      console.error(`[workers bench] ${label}: ERROR ${err?.message ?? err}`);
    }
  };
  const only = process.env.BENCH_WORKERS_ONLY ?? options.only; // 'throughput' or 'latency'
  for (const [kind, workers] of only === 'latency' ? [] : [['pg', 1], ['pg', 2], ['pg', 4], ['sqlite', 1]]) {
    await attempt(`throughput ${kind} × ${workers}`, () => throughput(kind, workers, runs, { timeoutMs, profileDir: kind === 'pg' && workers === 1 ? profileDir : undefined }));
  }
  if (only === 'throughput') return rows;
  await attempt('claim-to-start pg', () => latency('pg', samples));
  await attempt('claim-to-start sqlite', () => latency('sqlite', samples));
  return rows;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const rows = await runWorkersBench();
  if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
  else {
    console.log(`cores ${cpus().length}; load average ${load()}; targets: ≥ ${targets.runsPerSec4Pg} runs/s with 4 workers on PostgreSQL, claim-to-start p50 ≤ ${targets.latencyP50Ms} ms`);
    console.table(rows);
  }
}

#!/usr/bin/env node
// Calls started beside their commit (docs/durability.md): sequential runs of `--steps` idempotent
// tool calls, each an HTTP request to a server in another process on loopback that answers after
// `--serve-ms`, with `dispatchBeforeCommit` on and off, on SQLite (synchronous=FULL) and on
// PostgreSQL. Rounds alternate between the two settings in one process per store; prints the
// median run time of each and the load average. Not part of `npm run bench`; never asserts.
//
//   node bench/dispatch/early.mjs [--steps 3] [--runs 100] [--rounds 4] [--serve-ms 2] [--store sqlite|pg|both]
//   BENCH_PG_URL=postgresql://user@host:port/db (default postgres://postgres@127.0.0.1:5432/test)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';

const arg = (name, dflt) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] : dflt);
const steps = Number(arg('steps', 3));
const runs = Number(arg('runs', 100));
const rounds = Number(arg('rounds', 4));
const serveMs = Number(arg('serve-ms', 2));
const stores = arg('store', 'both') === 'both' ? ['sqlite', 'pg'] : [arg('store')];
const pgBase = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

/** An HTTP server in a child process that answers every request after `serveMs`. */
async function startServer() {
  const code = `const http = require('node:http'); const s = http.createServer((q, r) => setTimeout(() => r.end('{"ok":true}'), ${serveMs})); s.keepAliveTimeout = 60000; s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.kill() };
}

function template() {
  const nodes = [{ id: 'start', uses: 'core.start@1' }];
  for (let i = 1; i <= steps; i++) nodes.push({ id: `s${i}`, uses: 'tool.call@1', config: { tool: 'fetch', idempotent: true } });
  nodes.push({ id: 'end', uses: 'core.end@1' });
  const edges = nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id }));
  return { apiVersion: 'workflow.gm-hz.dev/v1alpha1', kind: 'WorkflowTemplate', metadata: { id: 'early-dispatch' }, spec: { requires: ['tool:fetch'], nodes, edges } };
}

async function openStore(kind, dir, early, url) {
  const tools = { fetch: { execute: async () => (await fetch(url)).json() } };
  if (kind === 'sqlite') return { rt: await WorkflowRuntime.open({ dir: join(dir, early ? 'on' : 'off'), tools, log: () => undefined, dispatchBeforeCommit: early }), drop: async () => {} };
  const schema = `bench_early_${process.pid}_${early ? 'on' : 'off'}`;
  const rt = await WorkflowRuntime.open({ dir, store: `${pgBase}?schema=${schema}`, tools, log: () => undefined, dispatchBeforeCommit: early });
  return {
    rt,
    drop: async () => {
      const c = new pg.Client({ connectionString: pgBase });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    },
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const server = await startServer();
const rows = [];
try {
  for (const kind of stores) {
    const dir = mkdtempSync(join(tmpdir(), 'bench-early-'));
    const opened = { on: await openStore(kind, dir, true, server.url), off: await openStore(kind, dir, false, server.url) };
    const t = template();
    const samples = { on: [], off: [] };
    try {
      for (const mode of ['on', 'off']) for (let i = 0; i < 20; i++) await (await opened[mode].rt.launch(t, { input: {} })).result;
      for (let r = 0; r < rounds; r++) {
        for (const mode of r % 2 === 0 ? ['on', 'off'] : ['off', 'on']) {
          for (let i = 0; i < runs; i++) {
            const t0 = performance.now();
            const outcome = await (await opened[mode].rt.launch(t, { input: {} })).result;
            if (outcome.status !== 'completed') throw new Error(`run ended ${outcome.status}`);
            samples[mode].push(performance.now() - t0);
          }
        }
      }
      for (const mode of ['on', 'off']) {
        rows.push({ store: kind, dispatchBeforeCommit: mode === 'on', steps, serveMs, runs: samples[mode].length, p50Ms: +median(samples[mode]).toFixed(2), perStepMs: +(median(samples[mode]) / steps).toFixed(2), loadAverage: load(), cores: cpus().length });
        console.error(`[early] ${JSON.stringify(rows[rows.length - 1])}`);
      }
    } finally {
      for (const o of Object.values(opened)) {
        await o.rt.close();
        await o.drop();
      }
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  server.stop();
}
console.table(rows);

#!/usr/bin/env node
// Durability benchmark: how long a resume takes after a crash for a run of 10,000 events, and
// how fast recorded replay goes (events per second). Prints a table; never asserts. Imports the
// built package: run `node build.mjs` first.
//
//   node bench/durability/bench.mjs [--json]
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { allEvents, buildHost, everything, registryGateway, SqliteJournalStore } from '../../test/durability/host.mjs';

const items = 2_600;
const answeredBeforeCrash = 2_540;

function template() {
  return {
    apiVersion: 'workflow.gm-hz.dev/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { id: 'bench-long' },
    spec: {
      requires: ['tool:*'],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'each', uses: 'core.foreach@1', config: { maxItems: items, maxConcurrency: 16, body: { uses: 'tool.call@1', config: { tool: 'index', idempotent: true } } }, inputs: { items: { source: 'input', path: '/items' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'end' },
      ],
    },
  };
}

async function quiet(store, runId) {
  let last = -1;
  for (let still = 0; still < 50; ) {
    await new Promise((r) => setImmediate(r));
    const seq = store.getRun(runId)?.lastSeq ?? 0;
    still = seq === last ? still + 1 : 0;
    last = seq;
  }
  return last;
}

export async function runDurabilityBench() {
  const rows = [];
  const dir = mkdtempSync(join(tmpdir(), 'bench-durability-'));
  const file = join(dir, 'workflow.db');
  const index = { idempotent: true, execute: (n) => ({ n }) };
  const registry = registryGateway({ tools: { index } });
  let calls = 0;
  const first = SqliteJournalStore.open(file);
  const h1 = await buildHost({
    store: first,
    gateway: { effects: () => registry.effects(), execute: (req, ctx) => (++calls > answeredBeforeCrash ? new Promise(() => undefined) : registry.execute(req, ctx)) },
  });
  const plan = h1.compile(template());
  const t0 = performance.now();
  await h1.kernel.launch({ runId: 'run-bench', plan, templateKey: plan.root, input: { items: Array.from({ length: items }, (_, i) => i) }, authority: everything });
  const crashedAt = await quiet(first, 'run-bench');
  rows.push({ measure: 'run to the crash point (fsync every commit)', events: crashedAt, ms: Math.round(performance.now() - t0) });

  // "Restart": a new store connection and a new engine instance; the run is cold.
  const store = SqliteJournalStore.open(file);
  const h2 = await buildHost({ store, gateway: registryGateway({ tools: { index } }) });
  const t1 = performance.now();
  await h2.kernel.resume('run-bench', 'bench', everything);
  rows.push({ measure: 'resume after a crash (cold: checkpoint + tail, reissue in flight)', events: crashedAt, ms: Math.round(performance.now() - t1) });
  await h2.kernel.waitFor('run-bench', false);
  const events = allEvents(store, 'run-bench');
  for (let i = 0; i < 1; i++) {
    const t2 = performance.now();
    const r = h2.replay('run-bench');
    const ms = performance.now() - t2;
    rows.push({ measure: `recorded replay #${i + 1} (identical: ${r.identical})`, events: events.length, ms: Math.round(ms), eventsPerSec: Math.round((events.length / ms) * 1000) });
  }
  first.close();
  store.close();
  return rows;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runDurabilityBench();
  if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
  else console.table(rows);
  process.exit(0);
}

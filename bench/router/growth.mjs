#!/usr/bin/env node
// What a long-running router keeps per run: the JavaScript heap (after a full GC) and the
// journal's size before and after many 2-step runs (edge profile, tools in process), 10 at a
// time. The router keeps every run it ever ran (compaction drops only framing), so both grow with
// the runs. Prints one line; never fails a build.
//
//   node --expose-gc bench/router/growth.mjs [--warmup 500] [--runs 3000]
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RouterHost } from '../../dist/hosts/router/index.js';
import { sequence } from '../lib/templates.mjs';
import { canCollect, numberArg, usedHeapAfterGc } from '../lib/util.mjs';

const warmup = numberArg('warmup', 500);
const runs = numberArg('runs', 3000);
if (!canCollect()) {
  console.error('run with node --expose-gc');
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), 'router-growth-'));
const host = await RouterHost.open({ dir, profile: 'edge', cadenceMs: 2, tools: { noop: { kind: 'in-process', execute: () => null } }, log: () => undefined });
const template = sequence('router-growth', 2);
const batches = async (count) => {
  for (let done = 0; done < count; done += 10) {
    const outcomes = await Promise.all(Array.from({ length: Math.min(10, count - done) }, () => host.launch({ type: 'inline', template }, {}).then((h) => h.result)));
    for (const o of outcomes) if (o.status !== 'completed') throw new Error(`a run ended ${o.status}`);
  }
};
const journal = () => statSync(join(dir, 'journal.log')).size;
try {
  await batches(warmup);
  const [h0, j0] = [usedHeapAfterGc(), journal()];
  await batches(runs);
  const [h1, j1] = [usedHeapAfterGc(), journal()];
  console.log(`${runs} 2-step runs after ${warmup}: heap ${((h1 - h0) / runs).toFixed(0)} bytes a run, journal ${((j1 - j0) / runs / 1024).toFixed(1)} KiB a run (${(j1 / 1e6).toFixed(1)} MB in all)`);
} finally {
  await host.stop();
  rmSync(dir, { recursive: true, force: true });
}

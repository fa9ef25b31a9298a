#!/usr/bin/env node
// What a long-lived process keeps per run: the JavaScript heap (after a full GC) before and after
// many 2-step runs launched from a template on SQLite FULL, `--in-flight` at a time. Run it past
// the host's bounded caches (trace ids of the last 4,096 runs, lease epochs of the last 10,000)
// with `--warmup`: what still grows after them is held per run for ever. Prints one line; never
// fails a build.
//
//   node --expose-gc bench/memory/heap-per-run.mjs [--warmup 15000] [--runs 25000] [--in-flight 10]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { sequence } from '../lib/templates.mjs';
import { canCollect, numberArg, usedHeapAfterGc } from '../lib/util.mjs';

const warmup = numberArg('warmup', 15000);
const runs = numberArg('runs', 25000);
const inFlight = numberArg('in-flight', 10);
if (!canCollect()) {
  console.error('run with node --expose-gc');
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), 'heap-per-run-'));
const rt = await WorkflowRuntime.open({ dir, tools: { noop: { execute: () => null } }, log: () => undefined });
const template = sequence('heap-per-run', 2);
const batches = async (count) => {
  for (let done = 0; done < count; done += inFlight) {
    const outcomes = await Promise.all(Array.from({ length: Math.min(inFlight, count - done) }, () => rt.launch(template, { input: {} }).then((h) => h.result)));
    for (const o of outcomes) if (o.status !== 'completed') throw new Error(`a run ended ${o.status}`);
  }
};
try {
  await batches(warmup);
  const before = usedHeapAfterGc();
  await batches(runs);
  const after = usedHeapAfterGc();
  console.log(`${runs} 2-step runs after ${warmup} of warm-up, ${inFlight} in flight: heap ${(before / 1024).toFixed(0)} -> ${(after / 1024).toFixed(0)} KiB, ${((after - before) / runs).toFixed(1)} bytes a run`);
} finally {
  await rt.close();
  rmSync(dir, { recursive: true, force: true });
}

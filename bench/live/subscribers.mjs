#!/usr/bin/env node
// What watching a run costs the run: the wall time of one foreach run over tool calls with 0 and
// with 3 live subscribers (one with a 4-event buffer that reads slowly), interleaved 0 3 0 3 …,
// each on a fresh SQLite state directory. Prints medians and every sample; never fails.
//
//   node bench/live/subscribers.mjs [--items 2500] [--rounds 5]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { arg, echoSweep } from './sweep.mjs';

const items = Number(arg('items', 2500));
const rounds = Number(arg('rounds', 5));

const template = echoSweep('bench-live');

async function drain(stream, slow) {
  let events = 0;
  for await (const item of stream) {
    if (item.kind === 'event') events++;
    if (slow) await new Promise((r) => setImmediate(r));
  }
  return events;
}

async function once(subscribers) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-live-'));
  const rt = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { echo: (input) => ({ echoed: input }) } });
  try {
    const input = { items: Array.from({ length: items }, (_, i) => i) };
    const handle = await rt.launch(template, { input, executionMode: 'background' });
    const readers = [];
    for (let i = 0; i < subscribers; i++) readers.push(drain(rt.live(handle.runId, i === subscribers - 1 ? { bufferEventsMax: 4 } : {}), i === subscribers - 1));
    const t0 = performance.now();
    const worker = await rt.startWorker();
    const outcome = await handle.result;
    const ms = performance.now() - t0;
    const seen = await Promise.all(readers);
    await worker.stop();
    if (outcome.status !== 'completed') throw new Error(`the run ${outcome.status}: ${JSON.stringify(outcome.error)}`);
    if (seen.some((n) => n !== outcome.seq)) throw new Error(`a subscriber saw ${seen} of ${outcome.seq} events`);
    return { ms, events: outcome.seq };
  } finally {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const samples = { 0: [], 3: [] };
let events = 0;
await once(0);
for (let r = 0; r < rounds; r++) {
  for (const n of [0, 3]) {
    const s = await once(n);
    samples[n].push(s.ms);
    events = s.events;
  }
}
console.table(
  [0, 3].map((n) => ({ subscribers: n, events, 'median ms': Math.round(median(samples[n])), samples: samples[n].map((x) => Math.round(x)).join(' ') })),
);

#!/usr/bin/env node
// What exporting spans costs a run: the wall time of one foreach run over tool calls with no
// telemetry, with an OTLP/HTTP receiver on loopback, and with a dead collector (a port that
// refuses), interleaved none live dead none …, each on a fresh SQLite state directory. Prints
// medians, every sample and the exporter's counts; never fails.
//
//   node bench/live/telemetry.mjs [--items 1000] [--rounds 5]
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { arg, echoSweep } from './sweep.mjs';

const items = Number(arg('items', 1000));
const rounds = Number(arg('rounds', 5));

const template = echoSweep('bench-otel');

let received = 0;
const receiver = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    for (const rs of JSON.parse(Buffer.concat(chunks).toString()).resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) received += ss.spans?.length ?? 0;
    res.end('{}');
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const live = `http://127.0.0.1:${receiver.address().port}`;
const refusing = createServer();
await new Promise((r) => refusing.listen(0, '127.0.0.1', r));
const dead = `http://127.0.0.1:${refusing.address().port}`;
await new Promise((r) => refusing.close(r));

async function once(kind) {
  const dir = mkdtempSync(join(tmpdir(), 'adw-bench-otel-'));
  const rt = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { echo: (i) => i }, ...(kind === 'none' ? {} : { telemetry: { otlpUrl: kind === 'live' ? live : dead } }) });
  try {
    const t0 = performance.now();
    const handle = await rt.launch(template, { input: { items: Array.from({ length: items }, (_, i) => i) } });
    const outcome = await handle.result;
    const ms = performance.now() - t0;
    if (outcome.status !== 'completed') throw new Error(`run ${outcome.status}`);
    return { ms, stats: rt.telemetryStats() };
  } finally {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const samples = { none: [], live: [], dead: [] };
let last = {};
process.stdout.write(`loadavg at start ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
for (let r = 0; r < rounds; r++) {
  for (const kind of ['none', 'live', 'dead']) {
    const { ms, stats } = await once(kind);
    samples[kind].push(ms);
    last[kind] = stats;
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const kind of ['none', 'live', 'dead']) process.stdout.write(`${kind.padEnd(5)} median ${median(samples[kind]).toFixed(0)} ms  samples ${samples[kind].map((x) => x.toFixed(0)).join(' ')}  last stats ${JSON.stringify(last[kind] ?? null)}\n`);
process.stdout.write(`spans received by the live receiver: ${received}\nloadavg at end ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
receiver.close();

#!/usr/bin/env node
// Records `events.json` of the cases from the current engine: runs each case on the built Node
// host (dist/, so `npm run build` first), as test/host-node/cases.test.ts does, and writes the
// comparable part of its events (see events.mjs). Review the diff before committing it: a changed
// line is a changed decision of the engine.
//
//   node test/cases/record.mjs               every case
//   node test/cases/record.mjs echo-tool ... the cases named
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { comparableEvents, formatEvents } from './events.mjs';

const casesDir = dirname(fileURLToPath(import.meta.url));
const root = join(casesDir, '..', '..');
const hostModule = join(root, 'dist', 'hosts', 'node', 'index.js');
if (!existsSync(hostModule)) {
  process.stderr.write('record: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
const { WorkflowRuntime } = await import(pathToFileURL(hostModule).href);

const all = readdirSync(casesDir, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(casesDir, d.name, 'template.json')))
  .map((d) => d.name)
  .sort();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !all.includes(n));
if (unknown.length > 0) {
  process.stderr.write(`record: no case ${unknown.join(', ')}\n`);
  process.exit(1);
}

const json = (file) => JSON.parse(readFileSync(file, 'utf8'));
for (const name of wanted.length > 0 ? wanted : all) {
  const dir = join(casesDir, name);
  const hostFile = join(dir, 'host.mjs');
  const host = existsSync(hostFile) ? ((await import(pathToFileURL(hostFile).href)).default ?? {}) : {};
  const state = mkdtempSync(join(tmpdir(), 'adw-record-'));
  const rt = await WorkflowRuntime.open({ dir: state, log: () => undefined, ...host });
  try {
    const handle = await rt.launch({ type: 'inline', template: json(join(dir, 'template.json')), dependencies: host.dependencies ?? [] }, { input: json(join(dir, 'input.json')) });
    const outcome = await handle.settled();
    const events = (await rt.readEvents(handle.runId, { limit: 10_000 })).events;
    writeFileSync(join(dir, 'events.json'), formatEvents(comparableEvents(events)));
    process.stdout.write(`record: ${name}: ${outcome.status}, ${events.length} events\n`);
  } finally {
    await rt.close();
    rmSync(state, { recursive: true, force: true });
  }
}

#!/usr/bin/env node
// The router's memory table: each row is one fresh router process, started the way docs/router.md
// tells operators to (the `agent-workflow-router` launcher, which execs Node with the memory
// flags; the `-reexec` rows start `agent-workflow router start`, which re-executes itself with
// them and keeps its wrapper process in the group) inside a fresh child cgroup v1 memory group of 128 MiB, run to idle
// (`--until-idle`). Prints per row the cgroup peak (`memory.max_usage_in_bytes`, page cache
// included), the process peak RSS, failcnt, OOM kills and the wall time. Never fails a build.
//
//   node bench/router/memory-table.mjs [row …]      rows: edge-16 standalone-16 edge-1000 standalone-1000
//                                                   edge-foreach-5000 standalone-foreach-5000 edge-foreach-5000-reexec
//                                                   compaction-57mb (the store alone: a 57 MB journal opened and compacted with the router's flags)
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { foreachOfScripts } from '../../test/router/fixtures/foreach-scripts.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const launcher = join(root, 'dist/hosts/router/agent-workflow-router');
const mainJs = join(root, 'dist/hosts/node/cli/main.js');
const fixtures = join(root, 'test/router/fixtures');
const limitBytes = 128 * 2 ** 20;

function cgroupDir() {
  const line = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  if (!line) return undefined;
  const own = line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1);
  return join('/sys/fs/cgroup/memory', own);
}


function manifestFor(work, row) {
  const file = join(work, 'runs.json');
  if (row.foreach) {
    const { template, input } = foreachOfScripts(row.foreach);
    writeFileSync(join(work, 'foreach.json'), JSON.stringify(template));
    writeFileSync(file, JSON.stringify([{ template: 'foreach.json', input, count: 1 }]));
  } else {
    const half = row.runs / 2;
    writeFileSync(
      file,
      JSON.stringify([
        { template: join(root, 'examples/weekly-report/weekly-report.json'), input: join(root, 'examples/weekly-report/input.json'), count: half },
        { template: join(root, 'examples/echo/echo.json'), input: join(root, 'examples/echo/input.json'), count: half },
      ]),
    );
  }
  return file;
}

/** The command of a row: a router run to idle, or (`compactBytes`) a journal of that size compacted by the store alone. */
async function commandFor(work, row) {
  if (row.compactBytes) {
    const { writeJournal } = await import(pathToFileURL(join(fixtures, 'write-journal.mjs')).href);
    writeJournal(join(work, 'state'), row.compactBytes);
    const { routerNodeFlags } = await import(pathToFileURL(join(root, 'dist/hosts/router/memory-flags.js')).href);
    return [process.execPath, ...routerNodeFlags, join(fixtures, 'compact-journal.mjs'), join(work, 'state')];
  }
  const entry = row.reexec ? [process.execPath, mainJs, 'router'] : [launcher];
  return [...entry, 'start', '--dir', join(work, 'state'), '--profile', row.profile, '--config', join(fixtures, 'examples-host.mjs'), '--runs', manifestFor(work, row), '--cadence-ms', '2', '--until-idle'];
}

async function runRow(row, parent) {
  const work = mkdtempSync(join(tmpdir(), `router-memory-${row.name}-`));
  const command = await commandFor(work, row);
  const cg = join(parent, `router-memory-bench-${process.pid}-${row.name}`);
  mkdirSync(cg);
  writeFileSync(join(cg, 'memory.limit_in_bytes'), String(limitBytes));
  const t0 = performance.now();
  const child = spawn('/bin/sh', ['-c', 'echo $$ > "$CG/cgroup.procs" && exec "$@"', 'sh', ...command], {
    env: { ...process.env, CG: cg },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (c) => (stdout += c));
  const code = await new Promise((resolve) => child.on('exit', (c) => resolve(c)));
  const wallMs = performance.now() - t0;
  const read = (name) => readFileSync(join(cg, name), 'utf8').trim();
  const oom = Object.fromEntries(read('memory.oom_control').split('\n').map((l) => l.split(' ')));
  const lines = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const summary = lines.find((l) => l.kind === 'RouterSummary');
  const compacted = row.compactBytes ? lines[0] : undefined;
  const out = {
    row: row.name,
    exit: code,
    completed: summary ? `${summary.runs.filter((r) => r.status === 'completed').length}/${summary.runs.length}` : compacted ? `${(compacted.report.bytesBefore / 1e6).toFixed(0)} MB -> ${(compacted.report.bytesAfter / 1e6).toFixed(0)} MB` : '-',
    cgroupPeakMiB: +(Number(read('memory.max_usage_in_bytes')) / 2 ** 20).toFixed(1),
    peakRssMiB: summary ? +(summary.peakRssBytes / 2 ** 20).toFixed(1) : compacted ? +(compacted.compactedRss / 2 ** 20).toFixed(1) : undefined,
    failcnt: Number(read('memory.failcnt')),
    oomKill: oom.oom_kill ?? 'n/a',
    wallS: +(wallMs / 1000).toFixed(1),
  };
  rmdirSync(cg);
  rmSync(work, { recursive: true, force: true });
  return out;
}

const rows = [
  { name: 'edge-16', profile: 'edge', runs: 16 },
  { name: 'standalone-16', profile: 'standalone', runs: 16 },
  { name: 'edge-1000', profile: 'edge', runs: 1000 },
  { name: 'standalone-1000', profile: 'standalone', runs: 1000 },
  { name: 'edge-foreach-5000', profile: 'edge', foreach: 5000 },
  { name: 'standalone-foreach-5000', profile: 'standalone', foreach: 5000 },
  { name: 'edge-foreach-5000-reexec', profile: 'edge', foreach: 5000, reexec: true },
  { name: 'compaction-57mb', compactBytes: 57e6 },
];

const parent = cgroupDir();
if (!parent) {
  console.log('no cgroup v1 memory controller: nothing measured');
  process.exit(0);
}
const wanted = process.argv.slice(2);
console.log(`load average at start: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const results = [];
for (const row of rows.filter((r) => wanted.length === 0 || wanted.includes(r.name))) {
  const r = await runRow(row, parent).catch((err) => ({ row: row.name, error: err.message }));
  results.push(r);
  console.log(JSON.stringify(r));
}
console.log(`load average at end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log('| row | completed | cgroup peak MiB | process peak RSS MiB | failcnt | OOM kills | wall s |');
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
for (const r of results) console.log(`| ${r.row} | ${r.completed ?? r.error} | ${r.cgroupPeakMiB ?? ''} | ${r.peakRssMiB ?? ''} | ${r.failcnt ?? ''} | ${r.oomKill ?? ''} | ${r.wallS ?? ''} |`);

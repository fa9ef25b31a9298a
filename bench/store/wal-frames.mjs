#!/usr/bin/env node
// What a commit writes: WAL frames per run of N-step runs launched through WorkflowRuntime on
// SQLite, by the b-tree each frame's page belongs to, and how many distinct pages a checkpoint
// copies at a few checkpoint intervals. Frame counts do not move with other load on the machine,
// unlike commit times. Needs the `sqlite3` command line (its `dbstat` table names the pages).
// Prints lines; never fails a build.
//
//   node bench/store/wal-frames.mjs [--steps 2] [--runs 100] [--warmup 200]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { sequence } from '../lib/templates.mjs';
import { numberArg } from '../lib/util.mjs';

const steps = numberArg('steps', 2);
const runs = numberArg('runs', 100);
const warmup = numberArg('warmup', 200);

const template = sequence('wal-frames', steps);

const dir = mkdtempSync(join(tmpdir(), 'wal-frames-'));
const file = join(dir, 'workflow.db');
const rt = await WorkflowRuntime.open({ dir, tools: { noop: { execute: () => null } }, log: () => undefined });
try {
  const db = rt.store.db;
  const one = async () => {
    const outcome = await (await rt.launch(template, { input: {} })).result;
    if (outcome.status !== 'completed') throw new Error(`run ended ${outcome.status}`);
  };
  for (let i = 0; i < warmup; i++) await one();
  // From here on the WAL keeps every frame: nothing is checkpointed until the count is taken.
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.pragma('wal_autocheckpoint = 0');
  for (let i = 0; i < runs; i++) await one();
  const wal = readFileSync(`${file}-wal`);
  const pageSize = wal.readUInt32BE(8);
  const frames = [];
  // WAL: a 32-byte header, then frames of a 24-byte header (page number, commit size) and a page.
  for (let off = 32; off + 24 + pageSize <= wal.length; off += 24 + pageSize) frames.push({ page: wal.readUInt32BE(off), commit: wal.readUInt32BE(off + 4) });
  db.pragma('wal_checkpoint(TRUNCATE)');
  const names = new Map(execFileSync('sqlite3', [file, 'SELECT pageno, name FROM dbstat'], { encoding: 'utf8' }).trim().split('\n').map((line) => {
    const [page, name] = line.split('|');
    return [Number(page), name];
  }));
  const commits = frames.filter((f) => f.commit !== 0).length;
  console.log(`${steps}-step runs: ${runs} runs, ${commits} commits, ${(frames.length / runs).toFixed(2)} WAL frames per run, ${(frames.length / commits).toFixed(2)} per commit (page ${pageSize} bytes)`);
  const byTree = new Map();
  for (const f of frames) {
    const name = f.page === 1 ? 'page 1 (database header)' : (names.get(f.page) ?? 'free or other');
    byTree.set(name, (byTree.get(name) ?? 0) + 1);
  }
  for (const [name, n] of [...byTree].sort((a, b) => b[1] - a[1])) console.log(`${(n / runs).toFixed(2).padStart(8)} frames per run  ${name}`);
  for (const every of [250, 1000, 4000]) {
    let distinct = 0;
    for (let i = 0; i < frames.length; i += every) distinct += new Set(frames.slice(i, i + every).map((f) => f.page)).size;
    console.log(`checkpoint every ${every} frames: ${(distinct / runs).toFixed(2)} distinct pages copied per run`);
  }
} finally {
  await rt.close();
  rmSync(dir, { recursive: true, force: true });
}

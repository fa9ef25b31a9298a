// Floors: what the hardware and the runtime cost at the least, for the table's "× floor" columns.
// Each floor: { id, label, unit, measure(ctx) -> { samplesMs: number[] } | null, reason? }.
// `samplesMs` are per-operation times; the runner takes their median / p99.
import { mkdtempSync, rmSync, openSync, writeSync, fsyncSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';

// The product's own better-sqlite3 (root install), else the one in bench/peers.
function loadSqlite() {
  for (const base of [import.meta.url, new URL('../peers/package.json', import.meta.url)]) {
    try {
      const req = createRequire(base);
      return { Database: req('better-sqlite3'), version: req('better-sqlite3/package.json').version };
    } catch { /* next */ }
  }
  throw new Error('better-sqlite3 is not installed (npm ci, or npm --prefix bench/peers ci)');
}

function sqliteCommit(synchronous) {
  return async ({ quick }) => {
    const { Database, version } = loadSqlite();
    const dir = mkdtempSync(join(tmpdir(), 'bench-floor-sqlite-'));
    const db = new Database(join(dir, 'floor.sqlite'));
    try {
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${synchronous}`);
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)');
      const ins = db.prepare('INSERT INTO t (v) VALUES (?)');
      const txn = db.transaction((v) => ins.run(v));
      const payload = Buffer.alloc(64, 7);
      const n = quick ? 500 : 5000;
      for (let i = 0; i < 200; i++) txn(payload); // warm-up
      const samplesMs = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        txn(payload);
        samplesMs.push(performance.now() - t0);
      }
      return { samplesMs, version: `better-sqlite3 ${version}` };
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

async function rawFsync({ quick }) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-floor-fsync-'));
  const fd = openSync(join(dir, 'f'), 'w');
  const buf = Buffer.alloc(64, 1);
  const samplesMs = [];
  try {
    const n = quick ? 500 : 5000;
    for (let i = 0; i < n + 100; i++) {
      const t0 = performance.now();
      writeSync(fd, buf);
      fsyncSync(fd);
      if (i >= 100) samplesMs.push(performance.now() - t0);
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  return { samplesMs };
}

// Hook: the product's engine bundle run directly in V8, without the WebAssembly component.
// Fill `measure` with a function returning { samplesMs } (per 2-step run or per activation,
// say which in `label`); while it is null the table shows the floor as not measured.
export const engineBundleInV8 = {
  id: 'engineInV8',
  label: 'engine bundle directly in V8, no component (per activation of a 2-step run)',
  unit: 'ms',
  measure: async (ctx) => (await import('../lib/engine-in-v8.mjs')).measureEngineInV8(ctx),
};

export default [
  { id: 'sqliteCommitNormal', label: 'one SQLite commit, better-sqlite3, WAL, synchronous=NORMAL (64-byte insert)', unit: 'ms', measure: sqliteCommit('NORMAL') },
  { id: 'sqliteCommitFull', label: 'one SQLite commit, better-sqlite3, WAL, synchronous=FULL (64-byte insert, fsync)', unit: 'ms', measure: sqliteCommit('FULL') },
  { id: 'fsync', label: 'write(64 B) + fsync on a temp file', unit: 'ms', measure: rawFsync },
  engineBundleInV8,
];

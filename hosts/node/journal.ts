// The Node host's journal store: SQLite through better-sqlite3, WAL mode. One `commit` call is
// one transaction, however many activations it holds (group commit); each entry is guarded by a
// compare-and-set on the run's last seq.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Database, Statement, Transaction } from 'better-sqlite3';
import { assertPortableId, StoreError, type ArtifactRef, type CommitEntry, type CommitRejection, type EventPage, type JournalStore, type RunRecord, type RunTail } from '../core/store.js';
import { migrations, schemaVersion } from './migrations.js';

export interface SqliteStoreOptions {
  /** `full` fsyncs at every commit (the default); `normal` may lose the last commits on power loss. */
  durability?: 'full' | 'normal';
  now?: () => number;
}

const newline = 0x0a;

function splitEvents(bytes: Uint8Array): Buffer[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Buffer[] = [];
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(newline, start);
    if (end < 0) end = buf.length;
    if (end > start) out.push(buf.subarray(start, end));
    start = end + 1;
  }
  return out;
}

/** Opens (creating or upgrading) a store, applying pending migrations in one transaction each. */
export function openDatabase(file: string, options: SqliteStoreOptions = {}): Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const existed = file !== ':memory:' && existsSync(file);
  const db = new BetterSqlite3(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.durability === 'normal' ? 'NORMAL' : 'FULL'}`);
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    migrate(db, file, existed);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

function migrate(db: Database, file: string, existed: boolean): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > schemaVersion) {
    throw new StoreError('store.schema-too-new', `the store ${file} has schema version ${current}, newer than this program understands (${schemaVersion}); upgrade the program instead of downgrading the store`);
  }
  for (const m of migrations) {
    if (m.version <= current) continue;
    if (m.destructive && existed) {
      const copy = `${file}.v${current}.bak`;
      db.pragma('wal_checkpoint(TRUNCATE)');
      copyFileSync(file, copy);
    }
    db.transaction(() => {
      m.up(db);
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
}

export class SqliteJournalStore implements JournalStore {
  private readonly now: () => number;
  private readonly stmt: {
    runHead: Statement;
    insertRun: Statement;
    updateRun: Statement;
    updateRunCheckpoint: Statement;
    insertEvent: Statement;
    loadRun: Statement;
    eventsAfter: Statement;
    getRun: Statement;
  };
  private readonly commitTx: Transaction<(entries: readonly CommitEntry[]) => CommitRejection[]>;

  constructor(
    readonly db: Database,
    options: SqliteStoreOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.stmt = {
      runHead: db.prepare('SELECT last_seq FROM runs WHERE run_id = ?').pluck(),
      insertRun: db.prepare('INSERT INTO runs (run_id, status, last_seq, checkpoint_seq, checkpoint, plan, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
      updateRun: db.prepare('UPDATE runs SET status = ?, last_seq = ?, updated_at = ? WHERE run_id = ?'),
      updateRunCheckpoint: db.prepare('UPDATE runs SET status = ?, last_seq = ?, updated_at = ?, checkpoint = ?, checkpoint_seq = ? WHERE run_id = ?'),
      insertEvent: db.prepare('INSERT INTO events (run_id, seq, body) VALUES (?, ?, ?)'),
      loadRun: db.prepare('SELECT plan, checkpoint, checkpoint_seq, last_seq FROM runs WHERE run_id = ?'),
      eventsAfter: db.prepare('SELECT seq, body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
      getRun: db.prepare('SELECT run_id, status, last_seq, created_at, updated_at FROM runs WHERE run_id = ?'),
    };
    this.commitTx = db.transaction((entries: readonly CommitEntry[]) => {
      const rejected: CommitRejection[] = [];
      const now = this.now();
      for (const e of entries) {
        const head = this.stmt.runHead.get(e.runId) as number | undefined;
        const stored = head ?? 0;
        if (stored !== e.expectedSeq || (head === undefined && !e.plan) || (head !== undefined && e.plan)) {
          rejected.push({ runId: e.runId, code: 'store.conflict', message: `run ${e.runId}: expected last seq ${e.expectedSeq}, the store has ${head === undefined ? 'no such run' : stored}` });
          continue;
        }
        const lines = splitEvents(e.events);
        if (lines.length !== e.lastSeq - e.expectedSeq) {
          throw new StoreError('store.corrupt', `run ${e.runId}: commit carries ${lines.length} events for seq ${e.expectedSeq + 1}..${e.lastSeq}`);
        }
        if (head === undefined) {
          assertPortableId(e.runId, 'run id');
          this.stmt.insertRun.run(e.runId, e.status, e.lastSeq, e.checkpoint ? e.lastSeq : 0, e.checkpoint ?? null, e.plan, now, now);
        } else if (e.checkpoint) {
          this.stmt.updateRunCheckpoint.run(e.status, e.lastSeq, now, e.checkpoint, e.lastSeq, e.runId);
        } else {
          this.stmt.updateRun.run(e.status, e.lastSeq, now, e.runId);
        }
        for (let i = 0; i < lines.length; i++) this.stmt.insertEvent.run(e.runId, e.expectedSeq + 1 + i, lines[i]);
      }
      return rejected;
    });
  }

  static open(file: string, options: SqliteStoreOptions = {}): SqliteJournalStore {
    return new SqliteJournalStore(openDatabase(file, options), options);
  }

  commit(entries: readonly CommitEntry[]): CommitRejection[] {
    if (entries.length === 0) return [];
    try {
      return this.commitTx.immediate(entries);
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError('store.io', `commit failed: ${(err as Error).message}`);
    }
  }

  load(runId: string): RunTail | undefined {
    const row = this.stmt.loadRun.get(runId) as { plan: Buffer; checkpoint: Buffer | null; checkpoint_seq: number; last_seq: number } | undefined;
    if (!row) return undefined;
    const rows = this.stmt.eventsAfter.all(runId, row.checkpoint_seq, -1) as { seq: number; body: Buffer }[];
    const parts: Buffer[] = [];
    for (const r of rows) {
      if (parts.length > 0) parts.push(Buffer.from([newline]));
      parts.push(r.body);
    }
    return { plan: row.plan, checkpoint: row.checkpoint ?? undefined, events: Buffer.concat(parts), lastSeq: row.last_seq };
  }

  readEvents(runId: string, afterSeq: number, limit: number): EventPage {
    const rows = this.stmt.eventsAfter.all(runId, afterSeq, limit + 1) as { seq: number; body: Buffer }[];
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    return { events: page.map((r) => r.body.toString('utf8')), lastSeq: page.length > 0 ? page[page.length - 1].seq : afterSeq, more };
  }

  getRun(runId: string): RunRecord | undefined {
    const row = this.stmt.getRun.get(runId) as { run_id: string; status: string; last_seq: number; created_at: number; updated_at: number } | undefined;
    return row ? { runId: row.run_id, status: row.status, lastSeq: row.last_seq, createdAt: row.created_at, updatedAt: row.updated_at } : undefined;
  }

  listRuns(filter: { statuses?: readonly string[]; limit?: number } = {}): RunRecord[] {
    const limit = filter.limit ?? 100;
    const statuses = filter.statuses ?? [];
    const where = statuses.length > 0 ? `WHERE status IN (${statuses.map(() => '?').join(', ')})` : '';
    const rows = this.db.prepare(`SELECT run_id, status, last_seq, created_at, updated_at FROM runs ${where} ORDER BY created_at DESC, run_id DESC LIMIT ?`).all(...statuses, limit) as {
      run_id: string;
      status: string;
      last_seq: number;
      created_at: number;
      updated_at: number;
    }[];
    return rows.map((row) => ({ runId: row.run_id, status: row.status, lastSeq: row.last_seq, createdAt: row.created_at, updatedAt: row.updated_at }));
  }

  putArtifact(bytes: Uint8Array, mediaType: string): ArtifactRef {
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    this.db.prepare('INSERT OR IGNORE INTO artifacts (digest, size, media_type, bytes, created_at) VALUES (?, ?, ?, ?, ?)').run(digest, bytes.byteLength, mediaType, bytes, this.now());
    return { digest, size: bytes.byteLength };
  }

  getArtifact(digest: string): (ArtifactRef & { bytes: Uint8Array; mediaType: string }) | undefined {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new StoreError('store.bad-id', `${JSON.stringify(digest)} is not an artifact digest`);
    const row = this.db.prepare('SELECT size, media_type, bytes FROM artifacts WHERE digest = ?').get(digest) as { size: number; media_type: string; bytes: Buffer } | undefined;
    if (!row) return undefined;
    if (`sha256:${createHash('sha256').update(row.bytes).digest('hex')}` !== digest) throw new StoreError('store.corrupt', `artifact ${digest} does not match its digest`);
    return { digest, size: row.size, mediaType: row.media_type, bytes: row.bytes };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

// The Node host's journal store: SQLite through better-sqlite3, WAL mode. One `commit` call is
// one transaction, however many activations it holds (group commit); each entry is guarded by a
// compare-and-set on the run's last seq.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Database, Statement, Transaction } from 'better-sqlite3';
import { assertPortableId, StoreError, type ArtifactRef, type CommitEntry, type CommitRejection, type EventPage, type RunRecord, type RunTail, type SyncJournalStore } from '../core/store.js';
import { migrations, schemaVersion } from './migrations.js';
import { SqliteOwnership, leaseIsLive, runRecordOf, type RunRow } from './sqlite-ownership.js';

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

const runColumns = 'run_id, status, last_seq, created_at, updated_at, outcome, lease_owner, lease_epoch, lease_expires_at, concurrency_key';

export class SqliteJournalStore implements SyncJournalStore {
  private readonly now: () => number;
  /** Leases, inbox, queue and workers, in the same database (see `RunOwnership`). */
  readonly ownership: SqliteOwnership;
  private readonly stmt: {
    runHead: Statement;
    insertRun: Statement;
    updateRun: Statement;
    insertEvent: Statement;
    loadRun: Statement;
    eventsAfter: Statement;
    getRun: Statement;
    markApplied: Statement;
  };
  private readonly commitTx: Transaction<(entries: readonly CommitEntry[]) => CommitRejection[]>;

  constructor(
    readonly db: Database,
    options: SqliteStoreOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.ownership = new SqliteOwnership(db);
    this.stmt = {
      runHead: db.prepare('SELECT last_seq, lease_owner, lease_epoch, lease_expires_at FROM runs WHERE run_id = ?'),
      insertRun: db.prepare(
        'INSERT INTO runs (run_id, status, last_seq, checkpoint_seq, checkpoint, plan, created_at, updated_at, outcome, wake_at, lease_owner, lease_epoch, lease_expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      // `checkpoint` and `plan` are kept when the entry has none (COALESCE); a queued run gets its plan at enqueue.
      updateRun: db.prepare(
        `UPDATE runs SET status = ?, last_seq = ?, updated_at = ?, outcome = ?, wake_at = ?,
           checkpoint = COALESCE(?, checkpoint), checkpoint_seq = CASE WHEN ? IS NULL THEN checkpoint_seq ELSE ? END,
           lease_owner = CASE WHEN ? THEN NULL ELSE lease_owner END, lease_expires_at = CASE WHEN ? THEN NULL ELSE lease_expires_at END
         WHERE run_id = ?`,
      ),
      insertEvent: db.prepare('INSERT INTO events (run_id, seq, body) VALUES (?, ?, ?)'),
      loadRun: db.prepare('SELECT plan, checkpoint, checkpoint_seq, last_seq FROM runs WHERE run_id = ?'),
      eventsAfter: db.prepare('SELECT seq, body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
      getRun: db.prepare(`SELECT ${runColumns} FROM runs WHERE run_id = ?`),
      markApplied: db.prepare("UPDATE run_inbox SET state = 'applied', applied_at = ?, applied_by = ? WHERE id = ? AND run_id = ? AND state = 'pending'"),
    };
    this.commitTx = db.transaction((entries: readonly CommitEntry[]) => {
      const rejected: CommitRejection[] = [];
      const now = this.now();
      for (const e of entries) {
        const head = this.stmt.runHead.get(e.runId) as { last_seq: number; lease_owner: string | null; lease_epoch: number; lease_expires_at: number | null } | undefined;
        const stored = head?.last_seq ?? 0;
        // A queued run has a row (with its plan) but no events: its first commit carries the plan too.
        const fresh = head === undefined || stored === 0;
        if (stored !== e.expectedSeq || (fresh && !e.plan) || (!fresh && e.plan)) {
          rejected.push({ runId: e.runId, code: 'store.conflict', message: `run ${e.runId}: expected last seq ${e.expectedSeq}, the store has ${head === undefined ? 'no such run' : stored}` });
          continue;
        }
        if (head !== undefined) {
          // Fencing: only the holder of the run's current lease commits. An entry without a lease
          // (a single-process host) commits only while nobody holds a live lease.
          const fenced = e.lease ? head.lease_epoch !== e.lease.epoch || head.lease_owner !== e.lease.owner : leaseIsLive(head.lease_owner, head.lease_expires_at, now);
          if (fenced) {
            rejected.push({
              runId: e.runId,
              code: 'store.fenced',
              message: `run ${e.runId}: the commit was staged under ${e.lease ? `lease epoch ${e.lease.epoch} of ${e.lease.owner}` : 'no lease'}, but the run's lease is epoch ${head.lease_epoch}${head.lease_owner ? ` held by ${head.lease_owner}` : ' (free)'}`,
            });
            continue;
          }
        }
        const lines = splitEvents(e.events);
        if (lines.length !== e.lastSeq - e.expectedSeq) {
          throw new StoreError('store.corrupt', `run ${e.runId}: commit carries ${lines.length} events for seq ${e.expectedSeq + 1}..${e.lastSeq}`);
        }
        const outcome = e.outcome ? JSON.stringify(e.outcome) : null;
        const wakeAt = e.outcome?.wakeAt ?? null;
        const release = e.releaseLease === true ? 1 : 0;
        if (head === undefined) {
          assertPortableId(e.runId, 'run id');
          const owner = e.lease && !release ? e.lease.owner : null;
          this.stmt.insertRun.run(e.runId, e.status, e.lastSeq, e.checkpoint ? e.lastSeq : 0, e.checkpoint ?? null, e.plan, now, now, outcome, wakeAt, owner, e.lease?.epoch ?? 0, owner ? (e.lease?.expiresAt ?? now) : null);
        } else {
          const checkpoint = e.checkpoint ?? null;
          this.stmt.updateRun.run(e.status, e.lastSeq, now, outcome, wakeAt, checkpoint, checkpoint, e.lastSeq, release, release, e.runId);
        }
        for (let i = 0; i < lines.length; i++) this.stmt.insertEvent.run(e.runId, e.expectedSeq + 1 + i, lines[i]);
        for (const id of e.appliedCommands ?? []) this.stmt.markApplied.run(now, e.lease?.owner ?? null, id, e.runId);
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
    // A queued run that never started has no journal yet.
    if (!row || row.last_seq === 0) return undefined;
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

  /** The engine's `load`, answered synchronously (the same as `load`). */
  loadSync(runId: string): RunTail | undefined {
    return this.load(runId);
  }

  getRun(runId: string): RunRecord | undefined {
    const row = this.stmt.getRun.get(runId) as RunRow | undefined;
    return row ? this.ownership.withWaitReason(runRecordOf(row)) : undefined;
  }

  listRuns(filter: { statuses?: readonly string[]; limit?: number } = {}): RunRecord[] {
    const limit = filter.limit ?? 100;
    const statuses = filter.statuses ?? [];
    const where = statuses.length > 0 ? `WHERE status IN (${statuses.map(() => '?').join(', ')})` : '';
    const rows = this.db.prepare(`SELECT ${runColumns} FROM runs ${where} ORDER BY created_at DESC, run_id DESC LIMIT ?`).all(...statuses, limit) as RunRow[];
    return rows.map((row) => this.ownership.withWaitReason(runRecordOf(row)));
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

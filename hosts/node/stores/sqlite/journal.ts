// The Node host's journal store: SQLite through better-sqlite3, WAL mode. One `commit` call is
// one transaction, however many activations it holds (group commit); each entry is guarded by a
// compare-and-set on the run's last seq.
import { sha256Digest } from '../../../shared/digest.js';
import { checksum, verified } from './checksum.js';
import { accessSync, closeSync, constants as fsConstants, copyFileSync, existsSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Database, Statement, Transaction } from 'better-sqlite3';
import { assertPortableId, StoreError, type ArtifactRef, type CommitEntry, type CommitRejection, type EventPage, type RunListFilter, type RunRecord, type RunTail, type SyncJournalStore } from '../../../core/store.js';
import type { StoredArtifactInfo } from '../bundle.js';
import { openedArtifact, type ArtifactCodec } from '../../artifacts/codec.js';
import type { RunProjection } from '../../../core/types.js';
import { checkpointInRow, migrations, schemaVersion } from './migrations.js';
import { fencingRefusal } from '../lease-rules.js';
import { SqliteOwnership, runRecordOf, type RunRow } from './ownership.js';
import { SqliteDeliveries } from './deliveries.js';
import { sqliteLimits } from '../../limits.js';
import { CodedError } from '../../../../engine/protocol/coded-error.js';

export interface SqliteStoreOptions {
  /** `full` fsyncs at every commit (the default); `normal` may lose the last commits on power loss. */
  durability?: 'full' | 'normal';
  /**
   * SQLite's page cache for this connection, in KiB (default 2048, SQLite's own default).
   * better-sqlite3 builds SQLite with a 16 MiB default, which a long run fills and the process
   * then keeps; the journal appends and reads recent pages, which the OS page cache serves.
   */
  cacheKiB?: number;
  /** A file (with its WAL) up to this size gets `PRAGMA quick_check` at open (default 32 MiB; 0: never). */
  quickCheckBytesMax?: number;
  now?: () => number;
  /** Seals artifacts at rest and opens sealed ones (hosts/node/artifacts/codec.ts). */
  artifactCodec?: ArtifactCodec;
}

const newline = 0x0a;

/** The events of a commit entry (UTF-8 JSON lines), one buffer each, without copying. */
export function splitEvents(bytes: Uint8Array): Buffer[] {
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

/** A store file this program cannot or must not use; the message names the file and the fix. */
export class StoreFileError extends CodedError {
  declare readonly code: 'store.not-a-store' | 'store.corrupt' | 'store.permission-denied' | 'store.full' | 'store.io' | 'store.bad-option';

  constructor(code: StoreFileError['code'], message: string) {
    super(code, message);
    this.name = 'StoreFileError';
  }
}

/** The first 16 bytes of every SQLite database file. */
const sqliteHeader = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * Translates a failure to reach or use the store file into a typed StoreError that names the
 * file: what a person must fix (permissions, disk space, a foreign file) is in the code.
 */
export function storeOpenError(err: unknown, file: string): unknown {
  if (err instanceof StoreError || err instanceof StoreFileError) return err;
  const code = String((err as { code?: unknown }).code ?? '');
  const message = (err as Error).message ?? String(err);
  if (['EACCES', 'EPERM', 'EROFS', 'SQLITE_READONLY', 'SQLITE_PERM', 'SQLITE_AUTH'].includes(code) || code.startsWith('SQLITE_READONLY_')) {
    return new StoreFileError('store.permission-denied', `cannot write the store ${file}: permission denied (${code}: ${message}); give this user read and write access to the file and its folder`);
  }
  if (code === 'ENOSPC' || code === 'SQLITE_FULL' || code === 'EDQUOT') return new StoreFileError('store.full', `the disk holding the store ${file} is full (${code}: ${message}); free space and retry`);
  if (code === 'SQLITE_NOTADB') return new StoreFileError('store.not-a-store', `${file} is not a SQLite database (${message}); it was left untouched`);
  if (code === 'SQLITE_CORRUPT' || code.startsWith('SQLITE_CORRUPT_')) return new StoreFileError('store.corrupt', `the store ${file} is corrupt (${message}); restore it from a backup`);
  if (code === 'SQLITE_CANTOPEN') return new StoreFileError('store.io', `cannot open the store ${file} (${message})`);
  return err;
}

/** Refuses what this program must not open as its store: a file that is not SQLite, or permissions it lacks. */
function checkStoreFile(file: string): void {
  const dir = dirname(file);
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, fsConstants.W_OK | fsConstants.X_OK);
    if (!existsSync(file)) return;
    accessSync(file, fsConstants.R_OK | fsConstants.W_OK);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      throw new StoreFileError('store.permission-denied', `cannot use the store ${file}: permission denied on ${(err as { path?: string }).path ?? dir} (${code}); give this user read and write access to the file and its folder`);
    }
    throw storeOpenError(err, file);
  }
  const size = statSync(file).size;
  // A zero-byte file is not a database SQLite would write: refuse it rather than initialise it
  // (a first open that was interrupted left it, or something else owns the name).
  if (size === 0) {
    throw new StoreFileError('store.not-a-store', `${file} is an empty file, not a store; it was left untouched (delete it to start a new store there)`);
  }
  const head = Buffer.alloc(sqliteHeader.length);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  if (!head.equals(sqliteHeader)) throw new StoreFileError('store.not-a-store', `${file} is not a SQLite database (its first bytes are not the SQLite header); it was left untouched`);
}

/** A SQLite database that holds someone else's tables and not our schema is not ours to migrate. */
function checkSchemaOwner(db: Database, file: string): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
  if (tables.length === 0) return;
  if (version === 0 || !tables.includes('runs')) {
    const shown = tables.slice(0, 5).join(', ') + (tables.length > 5 ? ', …' : '');
    throw new StoreFileError('store.not-a-store', `${file} is a SQLite database without this program's schema (user_version ${version}, tables: ${shown}); it was left untouched`);
  }
}

/**
 * Opens (creating or upgrading) a store, applying pending migrations in one transaction each.
 * Only a path that does not exist is created; an existing file must be one of our stores.
 */
/** The page cache a store's connection gets unless told otherwise (KiB). */
export const defaultSqliteCacheKiB = sqliteLimits.cacheKibDefault;

function cacheKiBOf(options: SqliteStoreOptions): number {
  const kib = options.cacheKiB ?? defaultSqliteCacheKiB;
  if (!Number.isInteger(kib) || kib < sqliteLimits.cacheKibMin || kib > sqliteLimits.cacheKibMax) {
    throw new StoreFileError('store.bad-option', `cacheKiB must be an integer from ${sqliteLimits.cacheKibMin} to ${sqliteLimits.cacheKibMax} (KiB), not ${String(kib)}`);
  }
  return kib;
}

function quickCheckBytesMaxOf(options: SqliteStoreOptions): number {
  const bytes = options.quickCheckBytesMax ?? sqliteLimits.quickCheckBytesMaxDefault;
  if (!Number.isInteger(bytes) || bytes < 0 || bytes > sqliteLimits.quickCheckBytesMaxLimit) {
    throw new StoreFileError('store.bad-option', `quickCheckBytesMax must be an integer from 0 to ${sqliteLimits.quickCheckBytesMaxLimit} (bytes; 0: never), not ${String(bytes)}`);
  }
  return bytes;
}

export function openDatabase(file: string, options: SqliteStoreOptions = {}): Database {
  const cacheKiB = cacheKiBOf(options);
  const quickCheckBytesMax = quickCheckBytesMaxOf(options);
  if (file !== ':memory:') checkStoreFile(file);
  const existed = file !== ':memory:' && existsSync(file);
  let db: Database;
  try {
    db = new BetterSqlite3(file);
  } catch (err) {
    throw storeOpenError(err, file);
  }
  try {
    // Before any pragma that writes: a foreign database is refused unchanged, a damaged one too.
    if (existed) checkSchemaOwner(db, file);
    if (existed) checkIntegrityAtOpen(db, file, quickCheckBytesMax);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.durability === 'normal' ? 'NORMAL' : 'FULL'}`);
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    db.pragma(`cache_size = -${cacheKiB}`);
    migrate(db, file, existed);
    return db;
  } catch (err) {
    db.close();
    throw storeOpenError(err, file);
  }
}

/**
 * `PRAGMA quick_check` of a store file no larger than `bytesMax` (with its WAL): a damaged page
 * structure is refused at open (`store.corrupt`) instead of surfacing in the middle of a run. A
 * changed byte inside a value is not what quick_check sees: the values' checksums are (checksum.ts).
 */
function checkIntegrityAtOpen(db: Database, file: string, bytesMax: number): void {
  if (bytesMax <= 0) return;
  const size = statSync(file).size + (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);
  if (size > bytesMax) return;
  const problems = (db.pragma('quick_check(5)') as { quick_check: string }[]).map((r) => r.quick_check).filter((r) => r !== 'ok');
  if (problems.length > 0) throw new StoreError('store.corrupt', `the store ${file} is damaged (quick_check: ${problems.join('; ')}); run \`agent-workflow doctor\` and restore it from a backup`);
}

function migrate(db: Database, file: string, existed: boolean): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > schemaVersion) {
    throw new StoreError('store.schema-too-new', `the store ${file} has schema version ${current}, newer than this program understands (${schemaVersion}); upgrade the program instead of downgrading the store`);
  }
  // A new store gets every migration in one transaction (one fsync instead of one per version; it
  // is as atomic either way, and a failure leaves it empty at version 0); an existing store gets
  // each pending one in its own.
  const pending = migrations.filter((m) => m.version > current);
  const steps = current === 0 ? [pending] : pending.map((m) => [m]);
  for (const step of steps) {
    if (current > 0 && existed && step.some((m) => m.destructive)) {
      const copy = `${file}.v${current}.bak`;
      db.pragma('wal_checkpoint(TRUNCATE)');
      copyFileSync(file, copy);
    }
    db.transaction(() => {
      for (const m of step) m.up(db);
      db.pragma(`user_version = ${step[step.length - 1].version}`);
    }).immediate();
  }
}

/**
 * The UPDATE of a run's row at a commit, by `(has checkpoint ? 1 : 0) + (releases the lease ? 2 : 0)
 * + (changes the status ? 4 : 0)`: a column the entry does not change is left out of the SET list,
 * because SQLite rewrites the entry of every index on a column named there, changed or not (the
 * lease index `runs_by_lease` was written at every commit of a leased run, `runs_by_status` at
 * every commit: one WAL frame of ~10 per commit each).
 * Parameters: [status,] last_seq, updated_at, outcome, wake_at, [checkpoint, checkpoint_crc, checkpoint_seq,] run_id;
 * `checkpoint` is NULL when the checkpoint goes into `checkpoints` (schema v10).
 */
function updateRunStatements(db: Database): Statement[] {
  const checkpoint = ', checkpoint = ?, checkpoint_crc = ?, checkpoint_seq = ?';
  const release = ', lease_owner = NULL, lease_expires_at = NULL';
  return Array.from({ length: 8 }, (_, n) => db.prepare(`UPDATE runs SET ${n & 4 ? 'status = ?, ' : ''}last_seq = ?, updated_at = ?, outcome = ?, wake_at = ?${n & 1 ? checkpoint : ''}${n & 2 ? release : ''} WHERE run_id = ?`));
}

/**
 * Events in one row of `events` at most. A commit's events for a run go into one row (schema v9),
 * `first_seq`..`seq` with their JSON lines joined by newlines as the commit carried them: one
 * index entry and one record a commit instead of one per event, ~4 fewer WAL frames a commit
 * (bench/store/wal-frames.mjs). A longer commit (a foreach that starts many items) is cut into
 * rows of this many, so that a page read from its middle splits at most this many lines.
 */
export const eventsPerRow = 64;

/** A row of `events`: the events `first_seq`..`seq`; a row written before v9 holds one (`first_seq` NULL), before v12 no `crc`. */
interface EventRow {
  first_seq: number | null;
  seq: number;
  body: Buffer;
  crc: number | null;
}

/** A journal row's body, checked against its checksum. */
function bodyOf(runId: string, row: EventRow): Buffer {
  return verified(row.body, row.crc, () => `run ${runId}: the journal row for seq ${row.first_seq ?? row.seq}..${row.seq}`);
}

/** The span of `lines[from..to]` in the commit's buffer they were cut from (no copy). */
function spanOf(lines: readonly Buffer[], from: number, to: number): Buffer {
  const first = lines[from];
  const last = lines[to];
  return Buffer.from(first.buffer, first.byteOffset, last.byteOffset + last.byteLength - first.byteOffset);
}

/** The events of a row, one buffer each; a row whose line count does not match its seq range is corrupt. */
function linesOf(runId: string, row: EventRow): Buffer[] {
  const lines = splitEvents(bodyOf(runId, row));
  const first = row.first_seq ?? row.seq;
  if (lines.length !== row.seq - first + 1) {
    throw new StoreError('store.corrupt', `run ${runId}: the journal row for seq ${first}..${row.seq} holds ${lines.length} events`);
  }
  return lines;
}

/**
 * The latest checkpoint of a run: its row names its seq (0: none) and holds it when it is small,
 * `checkpoints` holds a large one (schema v10). A store where they disagree (none where one is
 * named, both, or one at another seq) would rebuild the run from the wrong state.
 */
export function checkpointOf(runId: string, named: number, inline: Buffer | null, storedSeq: number | null, stored: Buffer | null): Buffer | undefined {
  const problem =
    inline !== null && stored !== null ? `both in its row and at seq ${storedSeq} in checkpoints`
    : stored !== null && storedSeq !== named ? `one at seq ${storedSeq}`
    : named > 0 && inline === null && stored === null ? 'none'
    : named === 0 && (inline !== null || stored !== null) ? 'one'
    : undefined;
  if (problem) throw new StoreError('store.corrupt', `run ${runId}: its row names the checkpoint at seq ${named}, the store holds ${problem}`);
  return inline ?? stored ?? undefined;
}

const runColumns = 'run_id, status, last_seq, created_at, updated_at, outcome, lease_owner, lease_epoch, lease_expires_at, concurrency_key';

export class SqliteJournalStore implements SyncJournalStore {
  private readonly now: () => number;
  private readonly codec: ArtifactCodec | undefined;
  /** Leases, inbox, queue and workers, in the same database (see `RunOwnership`). */
  readonly ownership: SqliteOwnership;
  /** The outbox of result deliveries, in the same database (see `DeliveryOutbox`). */
  readonly deliveries: SqliteDeliveries;
  private readonly stmt: {
    runHead: Statement;
    insertRun: Statement;
    updateRun: readonly Statement[];
    putCheckpoint: Statement;
    dropCheckpoint: Statement;
    insertEvents: Statement;
    loadRun: Statement;
    eventsAfter: Statement;
    getRun: Statement;
    markApplied: Statement;
    keepProjection: Statement;
  };
  private readonly commitTx: Transaction<(entries: readonly CommitEntry[]) => CommitRejection[]>;

  constructor(
    readonly db: Database,
    options: SqliteStoreOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.codec = options.artifactCodec;
    this.ownership = new SqliteOwnership(db);
    this.deliveries = new SqliteDeliveries(db);
    this.stmt = {
      runHead: db.prepare('SELECT status, last_seq, lease_owner, lease_epoch, lease_expires_at FROM runs WHERE run_id = ?'),
      insertRun: db.prepare(
        'INSERT INTO runs (run_id, status, last_seq, checkpoint_seq, checkpoint, checkpoint_crc, plan, plan_crc, created_at, updated_at, outcome, wake_at, lease_owner, lease_epoch, lease_expires_at, delivery_target, delivery_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      updateRun: updateRunStatements(db),
      putCheckpoint: db.prepare('INSERT INTO checkpoints (run_id, seq, body, crc) VALUES (?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, body = excluded.body, crc = excluded.crc'),
      dropCheckpoint: db.prepare('DELETE FROM checkpoints WHERE run_id = ?'),
      insertEvents: db.prepare('INSERT INTO events (run_id, first_seq, seq, body, crc) VALUES (?, ?, ?, ?, ?)'),
      loadRun: db.prepare(
        'SELECT r.plan, r.plan_crc, r.checkpoint_seq, r.last_seq, r.checkpoint AS inline, r.checkpoint_crc AS inline_crc, c.seq AS stored_seq, c.body AS stored, c.crc AS stored_crc FROM runs r LEFT JOIN checkpoints c ON c.run_id = r.run_id WHERE r.run_id = ?',
      ),
      eventsAfter: db.prepare('SELECT first_seq, seq, body, crc FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
      getRun: db.prepare(`SELECT ${runColumns} FROM runs WHERE run_id = ?`),
      markApplied: db.prepare("UPDATE run_inbox SET state = 'applied', applied_at = ?, applied_by = ? WHERE id = ? AND run_id = ? AND state = 'pending'"),
      keepProjection: db.prepare('UPDATE runs SET outcome = ?, wake_at = ? WHERE run_id = ? AND last_seq = ? AND outcome IS NULL'),
    };
    this.commitTx = db.transaction((entries: readonly CommitEntry[]) => {
      const rejected: CommitRejection[] = [];
      const now = this.now();
      for (const e of entries) {
        const head = this.stmt.runHead.get(e.runId) as { status: string; last_seq: number; lease_owner: string | null; lease_epoch: number; lease_expires_at: number | null } | undefined;
        const stored = head?.last_seq ?? 0;
        // A queued run has a row (with its plan) but no events: its first commit carries the plan too.
        const fresh = head === undefined || stored === 0;
        // Fencing first, as in the PostgreSQL store: a writer that lost the run is told so.
        if (head !== undefined) {
          const refusal = fencingRefusal(e, { owner: head.lease_owner, epoch: head.lease_epoch, expiresAt: head.lease_expires_at }, now);
          if (refusal) {
            rejected.push({ runId: e.runId, code: 'store.fenced', message: refusal });
            continue;
          }
        }
        if (stored !== e.expectedSeq || (fresh && !e.plan) || (!fresh && e.plan)) {
          rejected.push({ runId: e.runId, code: 'store.conflict', message: `run ${e.runId}: expected last seq ${e.expectedSeq}, the store has ${head === undefined ? 'no such run' : stored}` });
          continue;
        }
        const lines = splitEvents(e.events);
        if (lines.length !== e.lastSeq - e.expectedSeq) {
          throw new StoreError('store.corrupt', `run ${e.runId}: commit carries ${lines.length} events for seq ${e.expectedSeq + 1}..${e.lastSeq}`);
        }
        const outcome = e.outcome ? JSON.stringify(e.outcome) : null;
        const wakeAt = e.outcome?.wakeAt ?? null;
        const release = e.releaseLease === true ? 1 : 0;
        // A large checkpoint goes into its own row, written only when one is taken: in the run's
        // row it was written again by every commit that changed the row's size (a 10,000-item
        // foreach's is ~200 KB). A small one stays in the run's row (schema v10).
        const inline = e.checkpoint && checkpointInRow(e.checkpoint) ? e.checkpoint : null;
        if (head === undefined) {
          assertPortableId(e.runId, 'run id');
          const owner = e.lease && !release ? e.lease.owner : null;
          this.stmt.insertRun.run(e.runId, e.status, e.lastSeq, e.checkpoint ? e.lastSeq : 0, inline, inline ? checksum(inline) : null, e.plan, e.plan ? checksum(e.plan) : null, now, now, outcome, wakeAt, owner, e.lease?.epoch ?? 0, owner ? (e.lease?.expiresAt ?? now) : null, e.delivery ? JSON.stringify(e.delivery.target) : null, e.delivery?.digest ?? null);
        } else {
          const statusChanges = head.status !== e.status;
          const update = this.stmt.updateRun[(e.checkpoint ? 1 : 0) + (release ? 2 : 0) + (statusChanges ? 4 : 0)];
          const params: unknown[] = statusChanges ? [e.status, e.lastSeq, now, outcome, wakeAt] : [e.lastSeq, now, outcome, wakeAt];
          if (e.checkpoint) params.push(inline, inline ? checksum(inline) : null, e.lastSeq);
          params.push(e.runId);
          update.run(params);
          // A small checkpoint after a large one: the large one goes (a probe of the index when there is none).
          if (inline) this.stmt.dropCheckpoint.run(e.runId);
        }
        if (e.checkpoint && !inline) this.stmt.putCheckpoint.run(e.runId, e.lastSeq, e.checkpoint, checksum(e.checkpoint));
        for (let i = 0; i < lines.length; i += eventsPerRow) {
          const last = Math.min(i + eventsPerRow, lines.length) - 1;
          const body = spanOf(lines, i, last);
          this.stmt.insertEvents.run(e.runId, e.expectedSeq + 1 + i, e.expectedSeq + 1 + last, body, checksum(body));
        }
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
    const row = this.stmt.loadRun.get(runId) as
      | { plan: Buffer; plan_crc: number | null; checkpoint_seq: number; last_seq: number; inline: Buffer | null; inline_crc: number | null; stored_seq: number | null; stored: Buffer | null; stored_crc: number | null }
      | undefined;
    // A queued run that never started has no journal yet.
    if (!row || row.last_seq === 0) return undefined;
    const after = row.checkpoint_seq;
    verified(row.plan, row.plan_crc, () => `run ${runId}: its plan`);
    const checkpoint = checkpointOf(runId, after, verified(row.inline, row.inline_crc, () => `run ${runId}: its checkpoint`), row.stored_seq, verified(row.stored, row.stored_crc, () => `run ${runId}: its checkpoint`));
    const rows = this.stmt.eventsAfter.all(runId, after, -1) as EventRow[];
    const parts: Buffer[] = [];
    for (const r of rows) {
      if (parts.length > 0) parts.push(Buffer.from([newline]));
      // A checkpoint is taken at the end of a commit, so a row starts after it; a row that does
      // not (a checkpoint inside a long commit's rows) gives only its events after it.
      const first = r.first_seq ?? r.seq;
      parts.push(first > after ? bodyOf(runId, r) : spanOf(linesOf(runId, r), after + 1 - first, r.seq - first));
    }
    return { plan: row.plan, checkpoint, events: Buffer.concat(parts), lastSeq: row.last_seq };
  }

  readEvents(runId: string, afterSeq: number, limit: number): EventPage {
    // Every row holds at least one event after `afterSeq`: limit + 1 rows hold the page and tell
    // whether there is more. They are read one at a time: a row holds up to `eventsPerRow`
    // events, and reading stops once the page is full.
    const rows = this.stmt.eventsAfter.iterate(runId, afterSeq, limit + 1) as IterableIterator<EventRow>;
    const events: string[] = [];
    let lastSeq = afterSeq;
    for (const r of rows) {
      const lines = linesOf(runId, r);
      const first = r.first_seq ?? r.seq;
      for (let k = Math.max(0, afterSeq + 1 - first); k < lines.length; k++) {
        if (events.length === limit) return { events, lastSeq, more: true };
        events.push(lines[k].toString('utf8'));
        lastSeq = first + k;
      }
    }
    return { events, lastSeq, more: false };
  }

  /** The engine's `load`, answered synchronously (the same as `load`). */
  loadSync(runId: string): RunTail | undefined {
    return this.load(runId);
  }

  getRun(runId: string): RunRecord | undefined {
    const row = this.stmt.getRun.get(runId) as RunRow | undefined;
    return row ? this.ownership.withWaitReason(runRecordOf(row)) : undefined;
  }

  listRuns(filter: RunListFilter = {}): RunRecord[] {
    const limit = filter.limit ?? 100;
    const statuses = filter.statuses ?? [];
    const where: string[] = [];
    const params: unknown[] = [];
    if (statuses.length > 0) where.push(`status IN (${statuses.map(() => '?').join(', ')})`), params.push(...statuses);
    if (filter.before) where.push('(created_at < ? OR (created_at = ? AND run_id < ?))'), params.push(filter.before.createdAt, filter.before.createdAt, filter.before.runId);
    if (filter.createdFrom !== undefined) where.push('created_at >= ?'), params.push(filter.createdFrom);
    if (filter.createdTo !== undefined) where.push('created_at < ?'), params.push(filter.createdTo);
    if (filter.runIdPrefix) where.push('substr(run_id, 1, ?) = ?'), params.push(filter.runIdPrefix.length, filter.runIdPrefix);
    // The plan is the JSON text the run was pinned to; its `root` names the template.
    if (filter.template) {
      const exact = filter.template.includes('@');
      where.push(exact ? "json_extract(CAST(plan AS TEXT), '$.root') = ?" : "substr(json_extract(CAST(plan AS TEXT), '$.root'), 1, ?) = ?");
      params.push(...(exact ? [filter.template] : [filter.template.length + 1, `${filter.template}@`]));
    }
    // A trigger's run has the `launched` record of its event (ingress_by_binding, ingress_by_run).
    const origin = filter.origin;
    if (origin === 'trigger' || origin === 'direct') where.push(`run_id ${origin === 'direct' ? 'NOT ' : ''}IN (SELECT run_id FROM ingress_events WHERE run_id IS NOT NULL AND status = 'launched')`);
    else if (origin) {
      where.push(`run_id IN (SELECT run_id FROM ingress_events WHERE binding_id = ? AND status = 'launched'${origin.bindingRevision !== undefined ? ' AND binding_revision = ?' : ''})`);
      params.push(origin.bindingId, ...(origin.bindingRevision !== undefined ? [origin.bindingRevision] : []));
    }
    if (filter.pausedReason) where.push("status = 'paused' AND json_extract(CAST(outcome AS TEXT), '$.pausedReason') = ?"), params.push(filter.pausedReason);
    if (filter.search) {
      // A run id prefix, the source event id of the trigger event that launched it, or (three
      // characters or more) text in the correlation its launch recorded (`run.accepted`, the first
      // line of the run's first journal row): read from the rows the other filters leave, no index.
      const inCorrelation =
        filter.search.length >= 3
          ? " OR EXISTS (SELECT 1 FROM events e WHERE e.run_id = runs.run_id AND coalesce(e.first_seq, e.seq) = 1 AND instr(CAST(json_extract(substr(CAST(e.body AS TEXT), 1, CASE instr(CAST(e.body AS TEXT), char(10)) WHEN 0 THEN length(CAST(e.body AS TEXT)) ELSE instr(CAST(e.body AS TEXT), char(10)) - 1 END), '$.correlation') AS TEXT), ?) > 0)"
          : '';
      where.push(`(substr(run_id, 1, ?) = ? OR run_id IN (SELECT run_id FROM ingress_events WHERE source_event_id = ? AND status = 'launched')${inCorrelation})`);
      params.push(filter.search.length, filter.search, filter.search, ...(inCorrelation ? [filter.search] : []));
    }
    const sql = `SELECT ${runColumns} FROM runs ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, run_id DESC LIMIT ?`;
    const rows = this.db.prepare(sql).all(...params, limit) as RunRow[];
    return rows.map((row) => this.ownership.withWaitReason(runRecordOf(row)));
  }

  /** How many runs each status has (an index-only count: runs_by_status). */
  countRuns(): Record<string, number> {
    const rows = this.db.prepare('SELECT status, COUNT(*) AS n FROM runs GROUP BY status ORDER BY status').all() as { status: string; n: number }[];
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }

  keepProjection(runId: string, lastSeq: number, projection: RunProjection): void {
    this.stmt.keepProjection.run(JSON.stringify(projection), projection.wakeAt ?? null, runId, lastSeq);
  }

  putArtifact(bytes: Uint8Array, mediaType: string): ArtifactRef {
    const digest = sha256Digest(bytes);
    const stored = this.codec?.sealing ? this.codec.seal(bytes, digest) : bytes;
    // Storing the same bytes again refreshes `created_at` (when it was last stored): retention
    // never takes an artifact a run has just asked for (see `deleteArtifacts`).
    this.db.prepare('INSERT INTO artifacts (digest, size, media_type, bytes, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (digest) DO UPDATE SET created_at = MAX(created_at, excluded.created_at)').run(digest, bytes.byteLength, mediaType, stored, this.now());
    return { digest, size: bytes.byteLength };
  }

  getArtifact(digest: string): (ArtifactRef & { bytes: Uint8Array; mediaType: string; sealed?: Uint8Array }) | undefined {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new StoreError('store.bad-id', `${JSON.stringify(digest)} is not an artifact digest`);
    const row = this.db.prepare('SELECT size, media_type, bytes FROM artifacts WHERE digest = ?').get(digest) as { size: number; media_type: string; bytes: Buffer } | undefined;
    if (!row) return undefined;
    return openedArtifact(this.codec, digest, row.size, row.media_type, row.bytes);
  }

  /** A page of stored artifacts as kept (sealed or plain), by digest (key rotation). */
  storedArtifacts(options: { limit: number; afterDigest?: string }): { digest: string; bytes: Uint8Array }[] {
    return this.db.prepare('SELECT digest, bytes FROM artifacts WHERE digest > ? ORDER BY digest LIMIT ?').all(options.afterDigest ?? '', options.limit) as { digest: string; bytes: Buffer }[];
  }

  /** Replaces an artifact's stored bytes if they are still `from`; whether it did. */
  replaceStoredArtifact(digest: string, from: Uint8Array, to: Uint8Array): boolean {
    return this.db.prepare('UPDATE artifacts SET bytes = ? WHERE digest = ? AND bytes = ?').run(to, digest, from).changes === 1;
  }

  artifactsStoredBefore(cutoff: number, options: { limit: number; afterDigest?: string }): StoredArtifactInfo[] {
    const rows = this.db.prepare('SELECT digest, size, created_at FROM artifacts WHERE created_at < ? AND digest > ? ORDER BY digest LIMIT ?').all(cutoff, options.afterDigest ?? '', options.limit) as { digest: string; size: number; created_at: number }[];
    return rows.map((r) => ({ digest: r.digest, size: r.size, storedAt: r.created_at }));
  }

  deleteArtifacts(digests: readonly string[], cutoff: number): StoredArtifactInfo[] {
    const del = this.db.prepare('DELETE FROM artifacts WHERE digest = ? AND created_at < ? RETURNING digest, size, created_at');
    return this.db.transaction(() => digests.flatMap((d) => (del.all(d, cutoff) as { digest: string; size: number; created_at: number }[]).map((r) => ({ digest: r.digest, size: r.size, storedAt: r.created_at }))))();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

// `RunOwnership` on SQLite: leases, the inbox, the queue and workers, in the journal's database.
// Every decision that reads and then writes runs in one `BEGIN IMMEDIATE` transaction, which
// SQLite serialises across processes: two workers never claim the same run, and a concurrency
// limit holds across them.
import { closeSync, openSync, utimesSync, watch, type FSWatcher } from 'node:fs';
import type { Database, Statement } from 'better-sqlite3';
import type { ClaimedRun, CommandResult, InboxCommand, LeaseGrant, OperatorCommand, QueuedLaunch, RunOwnership, WorkerRecord } from '../../../core/ownership-store.js';
import { assertPortableId, StoreError, type RunRecord } from '../../../core/store.js';
import { terminalStatuses } from '../../../core/types.js';
import { activeStatusSql, commandResultOf, leaseDecision, postedAfterEnd, type InboxResultRow, type LeaseRow } from '../lease-rules.js';
import { ownerIsDead } from '../owner-id.js';
import { checksum, verified } from './checksum.js';

export interface RunRow {
  run_id: string;
  status: string;
  last_seq: number;
  created_at: number;
  updated_at: number;
  outcome: Buffer | string | null;
  lease_owner: string | null;
  lease_epoch: number;
  lease_expires_at: number | null;
  concurrency_key: string | null;
}

export function runRecordOf(row: RunRow): RunRecord {
  const record: RunRecord = { runId: row.run_id, status: row.status, lastSeq: row.last_seq, createdAt: row.created_at, updatedAt: row.updated_at };
  if (row.outcome !== null) record.outcome = JSON.parse(row.outcome.toString());
  record.lease = { epoch: row.lease_epoch, ...(row.lease_owner !== null ? { owner: row.lease_owner, expiresAt: row.lease_expires_at ?? 0 } : {}) };
  if (row.concurrency_key !== null) record.concurrencyKey = row.concurrency_key;
  return record;
}

const activeWhere = activeStatusSql;

/**
 * SQLite has no NOTIFY. A process that queues a run or posts a command touches a file next to the
 * database (`<file>-wake-queue`, `<file>-wake-inbox`: their times change, never their content)
 * after its transaction commits, and workers in other processes watch them (inotify on Linux):
 * a queued run starts without waiting for a worker's poll (claim-to-start p50 29 ms with the
 * 50 ms poll). Polling stays as the fallback: a lost wake-up only delays work.
 */
type WakeChannel = 'queue' | 'inbox';

export class SqliteOwnership implements RunOwnership {
  private readonly stmt: Record<string, Statement>;
  private readonly wakeFiles: Record<WakeChannel, string> | undefined;

  constructor(private readonly db: Database) {
    this.wakeFiles = db.memory ? undefined : { queue: `${db.name}-wake-queue`, inbox: `${db.name}-wake-inbox` };
    this.stmt = {
      lease: db.prepare('SELECT status, last_seq, lease_owner, lease_epoch, lease_expires_at FROM runs WHERE run_id = ?'),
      take: db.prepare('UPDATE runs SET lease_owner = ?, lease_epoch = lease_epoch + 1, lease_expires_at = ? WHERE run_id = ? AND lease_epoch = ?'),
      renew: db.prepare('UPDATE runs SET lease_expires_at = ? WHERE run_id = ? AND lease_owner = ? AND lease_epoch = ?'),
      release: db.prepare('UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL WHERE run_id = ? AND lease_owner = ? AND lease_epoch = ?'),
      status: db.prepare('SELECT status FROM runs WHERE run_id = ?').pluck(),
      post: db.prepare('INSERT INTO run_inbox (run_id, command, posted_at) VALUES (?, ?, ?)'),
      postRefused: db.prepare("INSERT INTO run_inbox (run_id, command, posted_at, state, applied_at, error) VALUES (?, ?, ?, 'refused', ?, ?)"),
      refuse: db.prepare("UPDATE run_inbox SET state = 'refused', error = ?, applied_at = ?, applied_by = ? WHERE id = ? AND state = 'pending'"),
      result: db.prepare('SELECT id, run_id, state, applied_at, applied_by, error FROM run_inbox WHERE id = ?'),
      byIdempotencyKey: db.prepare('SELECT run_id FROM run_queue WHERE idempotency_key = ?').pluck(),
      insertQueuedRun: db.prepare("INSERT INTO runs (run_id, status, last_seq, plan, plan_crc, created_at, updated_at, concurrency_key, queued_at, delivery_target, delivery_digest) VALUES (?, 'queued', 0, ?, ?, ?, ?, ?, ?, ?, ?)"),
      insertQueue: db.prepare('INSERT INTO run_queue (run_id, launch, concurrency_limit, idempotency_key) VALUES (?, ?, ?, ?)'),
      queued: db.prepare('SELECT r.plan, r.plan_crc, q.launch, q.concurrency_limit FROM runs r JOIN run_queue q USING (run_id) WHERE r.run_id = ?'),
      liveOwners: db.prepare('SELECT DISTINCT lease_owner FROM runs WHERE lease_owner IS NOT NULL AND lease_expires_at >= ?').pluck(),
      takeoverCandidates: db.prepare(
        `SELECT run_id, last_seq, lease_epoch, lease_owner, lease_expires_at FROM runs
          WHERE ${activeWhere}
            AND (lease_owner IS NULL OR lease_expires_at < ? OR lease_owner IN (SELECT value FROM json_each(?)))
            AND (status = 'running' OR (wake_at IS NOT NULL AND wake_at <= ?)
                 OR EXISTS (SELECT 1 FROM run_inbox i WHERE i.run_id = runs.run_id AND i.state = 'pending'))
          ORDER BY updated_at LIMIT ?`,
      ),
      // Of each key, only the runs that could ever start (its `concurrency_limit` oldest waiting
      // ones): a backlog of one key must not fill the candidate window and starve later runs.
      queuedCandidates: db.prepare(
        `SELECT run_id, lease_epoch, concurrency_key, concurrency_limit FROM (
           SELECT r.run_id, r.lease_epoch, r.concurrency_key, q.concurrency_limit, r.queued_at,
                  row_number() OVER (PARTITION BY r.concurrency_key ORDER BY r.queued_at, r.run_id) AS pos
             FROM runs r JOIN run_queue q USING (run_id)
            WHERE r.status = 'queued' AND (r.lease_owner IS NULL OR r.lease_expires_at < ? OR r.lease_owner IN (SELECT value FROM json_each(?))))
          WHERE concurrency_key IS NULL OR pos <= concurrency_limit
          ORDER BY queued_at, run_id LIMIT ?`,
      ),
      activeOfKey: db.prepare(
        `SELECT count(*) FROM runs WHERE concurrency_key = ? AND (${activeWhere}
           OR (status = 'queued' AND lease_owner IS NOT NULL AND lease_expires_at >= ?))`,
      ).pluck(),
      limitOfKey: db.prepare('SELECT q.concurrency_limit FROM runs r JOIN run_queue q USING (run_id) WHERE r.run_id = ?').pluck(),
      cancelQueued: db.prepare(
        `UPDATE runs SET status = 'cancelled', updated_at = ?, outcome = ? WHERE run_id = ? AND status = 'queued'
           AND (lease_owner IS NULL OR lease_expires_at < ?)`,
      ),
      refuseQueued: db.prepare(
        `UPDATE runs SET status = 'failed', updated_at = ?, outcome = ?, lease_owner = NULL, lease_expires_at = NULL
          WHERE run_id = ? AND status = 'queued' AND lease_owner = ? AND lease_epoch = ?`,
      ),
      worker: db.prepare(
        'INSERT INTO workers (owner, started_at, heartbeat_at, info) VALUES (?, ?, ?, ?) ON CONFLICT (owner) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, info = excluded.info',
      ),
      removeWorker: db.prepare('DELETE FROM workers WHERE owner = ?'),
      liveWorkers: db.prepare('SELECT owner, started_at, heartbeat_at, info FROM workers WHERE heartbeat_at >= ? ORDER BY started_at'),
    };
  }

  private tx<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn).immediate();
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError('store.io', `ownership: ${(err as Error).message}`);
    }
  }

  /** Owners with unexpired leases whose processes are provably gone (this machine only). */
  private deadOwners(now: number): string {
    const owners = this.stmt.liveOwners.all(now) as string[];
    return JSON.stringify(owners.filter((o) => ownerIsDead(o)));
  }

  acquireLease(runId: string, owner: string, ttlMs: number, now: number): LeaseGrant {
    return this.tx(() => {
      const row = this.stmt.lease.get(runId) as LeaseRow | undefined;
      const decision = leaseDecision(runId, row, owner, now);
      if (decision.action === 'renew') this.stmt.renew.run(now + ttlMs, runId, owner, row!.lease_epoch);
      if (decision.action === 'take') this.stmt.take.run(owner, now + ttlMs, runId, row!.lease_epoch);
      return decision.grant;
    });
  }

  renewLeases(owner: string, leases: ReadonlyMap<string, number>, ttlMs: number, now: number): string[] {
    if (leases.size === 0) return [];
    return this.tx(() => {
      const lost: string[] = [];
      for (const [runId, epoch] of leases) if (this.stmt.renew.run(now + ttlMs, runId, owner, epoch).changes === 0) lost.push(runId);
      return lost;
    });
  }

  releaseLease(runId: string, owner: string, epoch: number): void {
    this.stmt.release.run(runId, owner, epoch);
  }

  postCommand(runId: string, command: OperatorCommand, now: number): number {
    const { id, pending } = this.tx(() => {
      const status = this.stmt.status.get(runId) as string | undefined;
      if (status === undefined) throw new StoreError('store.not-found', `run ${runId} does not exist in this store`);
      // In the transaction that read the status: no commit of the run can come between.
      if (terminalStatuses.has(status)) return { id: Number(this.stmt.postRefused.run(runId, JSON.stringify(command), now, now, JSON.stringify(postedAfterEnd(runId, status))).lastInsertRowid), pending: false };
      return { id: Number(this.stmt.post.run(runId, JSON.stringify(command), now).lastInsertRowid), pending: true };
    });
    if (pending) this.signal('inbox');
    return id;
  }

  /** Tells watching processes that work was committed (see `WakeChannel`); never fails the caller. */
  private signal(channel: WakeChannel): void {
    const file = this.wakeFiles?.[channel];
    if (file === undefined) return;
    const now = new Date();
    try {
      utimesSync(file, now, now);
    } catch {
      // No watcher has created it: nobody to wake.
    }
  }

  subscribe(listener: (event: { channel: WakeChannel; runId?: string }) => void): () => void {
    // An in-memory store has no other process to hear from; this one wakes its workers itself.
    if (this.wakeFiles === undefined) return () => undefined;
    const watchers: FSWatcher[] = [];
    try {
      for (const channel of ['queue', 'inbox'] as const) {
        const file = this.wakeFiles[channel];
        closeSync(openSync(file, 'a'));
        const watcher = watch(file, { persistent: false }, () => listener({ channel }));
        // A watch that breaks (the file removed) leaves the worker polling.
        watcher.on('error', () => watcher.close());
        watchers.push(watcher);
      }
    } catch (err) {
      for (const w of watchers) w.close();
      throw new StoreError('store.io', `ownership: cannot watch ${this.wakeFiles.queue}: ${(err as Error).message}`);
    }
    return () => {
      for (const w of watchers) w.close();
    };
  }

  pendingCommands(runIds: readonly string[], limit: number): InboxCommand[] {
    const out: InboxCommand[] = [];
    for (let i = 0; i < runIds.length && out.length < limit; i += 500) {
      const chunk = runIds.slice(i, i + 500);
      const rows = this.db
        .prepare(`SELECT id, run_id, command, posted_at FROM run_inbox WHERE state = 'pending' AND run_id IN (${chunk.map(() => '?').join(', ')}) ORDER BY id LIMIT ?`)
        .all(...chunk, limit - out.length) as { id: number; run_id: string; command: Buffer | string; posted_at: number }[];
      for (const r of rows) out.push({ id: r.id, runId: r.run_id, command: JSON.parse(r.command.toString()), postedAt: r.posted_at });
    }
    return out.sort((a, b) => a.id - b.id);
  }

  refuseCommands(refusals: readonly { id: number; error: { code: string; message: string } }[], owner: string, now: number): void {
    if (refusals.length === 0) return;
    this.tx(() => {
      for (const r of refusals) this.stmt.refuse.run(JSON.stringify(r.error), now, owner, r.id);
    });
  }

  commandResult(id: number): CommandResult | undefined {
    const row = this.stmt.result.get(id) as (Omit<InboxResultRow, 'error'> & { error: Buffer | string | null }) | undefined;
    return row ? commandResultOf({ ...row, error: row.error === null ? null : JSON.parse(row.error.toString()) }) : undefined;
  }

  enqueue(launch: QueuedLaunch, now: number): { runId: string; created: boolean } {
    assertPortableId(launch.runId, 'run id');
    const queued = this.tx(() => {
      if (launch.idempotencyKey !== undefined) {
        const existing = this.stmt.byIdempotencyKey.get(launch.idempotencyKey) as string | undefined;
        if (existing) return { runId: existing, created: false };
      }
      if (this.stmt.status.get(launch.runId) !== undefined) return { runId: launch.runId, created: false };
      const { plan, concurrencyLimit, idempotencyKey, delivery, ...request } = launch;
      this.stmt.insertQueuedRun.run(launch.runId, plan, checksum(plan), now, now, launch.concurrencyKey ?? null, now, delivery ? JSON.stringify(delivery.target) : null, delivery?.digest ?? null);
      this.stmt.insertQueue.run(launch.runId, JSON.stringify({ ...request, queuedAt: now }), concurrencyLimit ?? 1, idempotencyKey ?? null);
      return { runId: launch.runId, created: true };
    });
    if (queued.created) this.signal('queue');
    return queued;
  }

  queuedLaunch(runId: string): QueuedLaunch | undefined {
    const row = this.stmt.queued.get(runId) as { plan: Buffer; plan_crc: number | null; launch: Buffer | string; concurrency_limit: number } | undefined;
    if (!row) return undefined;
    return { ...JSON.parse(row.launch.toString()), plan: verified(row.plan, row.plan_crc, () => `run ${runId}: its plan`), concurrencyLimit: row.concurrency_limit };
  }

  claim(owner: string, limit: number, ttlMs: number, now: number): ClaimedRun[] {
    if (limit <= 0) return [];
    return this.tx(() => {
      const dead = this.deadOwners(now);
      const claimed: ClaimedRun[] = [];
      const takeovers = this.stmt.takeoverCandidates.all(now, dead, now, limit) as { run_id: string; last_seq: number; lease_epoch: number }[];
      for (const r of takeovers) {
        if (this.stmt.take.run(owner, now + ttlMs, r.run_id, r.lease_epoch).changes === 0) continue;
        claimed.push(r.last_seq === 0 ? this.started(r.run_id, r.lease_epoch + 1) : { runId: r.run_id, epoch: r.lease_epoch + 1, kind: 'takeover' });
      }
      if (claimed.length >= limit) return claimed;
      // FIFO per concurrency key: once the oldest waiting run of a key cannot start, no later one of that key may.
      const blocked = new Set<string>();
      const candidates = this.stmt.queuedCandidates.all(now, dead, (limit - claimed.length) * 4 + 16) as { run_id: string; lease_epoch: number; concurrency_key: string | null; concurrency_limit: number }[];
      for (const r of candidates) {
        if (claimed.length >= limit) break;
        const key = r.concurrency_key;
        if (key !== null) {
          if (blocked.has(key)) continue;
          if ((this.stmt.activeOfKey.get(key, now) as number) >= r.concurrency_limit) {
            blocked.add(key);
            continue;
          }
        }
        if (this.stmt.take.run(owner, now + ttlMs, r.run_id, r.lease_epoch).changes === 0) continue;
        claimed.push(this.started(r.run_id, r.lease_epoch + 1));
      }
      return claimed;
    });
  }

  private started(runId: string, epoch: number): ClaimedRun {
    const launch = this.queuedLaunch(runId);
    return launch ? { runId, epoch, kind: 'start', launch } : { runId, epoch, kind: 'takeover' };
  }

  cancelQueued(runId: string, reason: string, by: string, now: number): boolean {
    const outcome = JSON.stringify({ error: { code: 'run.cancelled', message: `${by} cancelled the run before it started: ${reason}` } });
    return this.stmt.cancelQueued.run(now, outcome, runId, now).changes > 0;
  }

  refuseQueued(runId: string, lease: { owner: string; epoch: number }, error: { code: string; message: string }, now: number): boolean {
    return this.stmt.refuseQueued.run(now, JSON.stringify({ error }), runId, lease.owner, lease.epoch).changes > 0;
  }

  /** Adds why a queued run waits. */
  withWaitReason(record: RunRecord): RunRecord {
    if (record.status !== 'queued') return record;
    const now = Date.now();
    if (record.lease?.owner && (record.lease.expiresAt ?? 0) >= now) return { ...record, waitReason: `starting: claimed by ${record.lease.owner}` };
    if (record.concurrencyKey !== undefined) {
      const active = this.stmt.activeOfKey.get(record.concurrencyKey, now) as number;
      const max = this.stmt.limitOfKey.get(record.runId) as number;
      if (active >= max) return { ...record, waitReason: `concurrency key ${record.concurrencyKey}: ${active} of ${max} active` };
    }
    return { ...record, waitReason: 'waiting for a worker (agent-workflow serve)' };
  }

  heartbeatWorker(record: WorkerRecord): void {
    this.stmt.worker.run(record.owner, record.startedAt, record.heartbeatAt, record.info ?? null);
  }

  removeWorker(owner: string): void {
    this.stmt.removeWorker.run(owner);
  }

  liveWorkers(now: number, staleMs: number): WorkerRecord[] {
    const rows = this.stmt.liveWorkers.all(now - staleMs) as { owner: string; started_at: number; heartbeat_at: number; info: string | null }[];
    return rows.filter((r) => !ownerIsDead(r.owner)).map((r) => ({ owner: r.owner, startedAt: r.started_at, heartbeatAt: r.heartbeat_at, ...(r.info !== null ? { info: r.info } : {}) }));
  }
}

// `RunOwnership` on PostgreSQL: leases, the inbox, the queue and workers, in the journal's schema.
// The semantics are the SQLite store's (`stores/sqlite/ownership.ts`); what SQLite gets from one
// writer at a time, PostgreSQL gets from row locks and advisory locks:
//
// - a decision that reads then writes a run locks its row (`FOR UPDATE`) or writes with a
//   compare-and-set on `lease_epoch`, in one transaction;
// - `claim` locks candidate rows with `FOR UPDATE SKIP LOCKED`, so workers claiming at once
//   take different runs instead of queueing behind each other;
// - the per-key concurrency limit and FIFO order hold across workers because the queued runs of a
//   key are counted and taken under `pg_advisory_xact_lock` of that key (keys locked in sorted
//   order, so two claimers never wait on each other in a cycle).
import type { Pool, PoolClient, QueryConfig } from 'pg';
import type { ClaimedRun, CommandResult, InboxCommand, LeaseGrant, OperatorCommand, QueuedLaunch, RunOwnership, WorkerRecord } from '../../../core/ownership-store.js';
import { assertPortableId, StoreError, type RunRecord } from '../../../core/store.js';
import { pgLimits } from '../../limits.js';
import { ownerIsDead } from '../owner-id.js';
import { rows, statement, transaction } from './pool.js';
import { activeStatusSql, commandResultOf, leaseDecision, postedAfterEndSuffix, terminalStatusListSql, type InboxResultRow } from '../lease-rules.js';

export interface PgRunRow {
  run_id: string;
  status: string;
  last_seq: number;
  created_at: number;
  updated_at: number;
  outcome: unknown;
  lease_owner: string | null;
  lease_epoch: number;
  lease_expires_at: number | null;
  concurrency_key: string | null;
  /** For a queued run with a key: active runs of the key, and the run's limit. */
  key_active: number | null;
  key_limit: number | null;
}

/** `status` values that hold a slot of their concurrency key (besides a claimed queued run). */
const activeStatus = activeStatusSql;

/** The runs holding a slot of concurrency key `key` (an SQL expression); `$1` is the caller's `now`. */
const keyActiveCount = (s: string, key: string): string =>
  `(SELECT count(*) FROM ${s}.runs a WHERE a.concurrency_key = ${key}
           AND (a.${activeStatus} OR (a.status = 'queued' AND a.lease_owner IS NOT NULL AND a.lease_expires_at >= $1::bigint)))`;

/** Which leases a claim may take: free, expired, or held by a process of this machine that is gone (`$2`). */
const claimable = `(r.lease_owner IS NULL OR r.lease_expires_at < $1::bigint OR r.lease_owner = ANY($2::text[]))`;

/** A run to take over: neither queued nor ended, its lease claimable, and needing an owner (running, a timer due, commands pending). */
const takeoverWhere = (s: string): string =>
  `r.${activeStatus} AND ${claimable}
                  AND (r.status = 'running' OR (r.wake_at IS NOT NULL AND r.wake_at <= $1::bigint)
                       OR EXISTS (SELECT 1 FROM ${s}.run_inbox i WHERE i.run_id = r.run_id AND i.state = 'pending'))`;

/** The keys with claimable waiting runs and a free slot, one row each (a query's FROM ... HAVING). */
const admissibleKeys = (s: string): string =>
  `FROM ${s}.runs r JOIN ${s}.run_queue q USING (run_id)
                WHERE r.status = 'queued' AND r.concurrency_key IS NOT NULL AND ${claimable}
                GROUP BY r.concurrency_key
               HAVING ${keyActiveCount(s, 'r.concurrency_key')} < max(q.concurrency_limit)`;

/** The launch of a queued run a claim took, from its queue row and its plan (a limit of 1 when the row has none). */
function launchOfRow(launch: LaunchRow['launch'], plan: Buffer, concurrencyLimit: number | null): QueuedLaunch {
  return { ...launch, plan, concurrencyLimit: concurrencyLimit ?? 1 } as QueuedLaunch;
}

/** The SELECT list of a run record; `$1` is the caller's `now` (for the wait reason). */
export function runRecordColumns(s: string): string {
  return `r.run_id, r.status, r.last_seq, r.created_at, r.updated_at, r.outcome, r.lease_owner, r.lease_epoch, r.lease_expires_at, r.concurrency_key,
    CASE WHEN r.status = 'queued' AND r.concurrency_key IS NOT NULL THEN
      ${keyActiveCount(s, 'r.concurrency_key')} END AS key_active,
    (SELECT q.concurrency_limit FROM ${s}.run_queue q WHERE q.run_id = r.run_id) AS key_limit`;
}

/** A run record with, for a queued run, why it waits (as `SqliteOwnership.withWaitReason`). */
export function pgRunRecordOf(row: PgRunRow, now: number): RunRecord {
  const record: RunRecord = { runId: row.run_id, status: row.status, lastSeq: row.last_seq, createdAt: row.created_at, updatedAt: row.updated_at };
  if (row.outcome !== null) record.outcome = row.outcome as RunRecord['outcome'];
  record.lease = { epoch: row.lease_epoch, ...(row.lease_owner !== null ? { owner: row.lease_owner, expiresAt: row.lease_expires_at ?? 0 } : {}) };
  if (row.concurrency_key !== null) record.concurrencyKey = row.concurrency_key;
  if (record.status !== 'queued') return record;
  if (record.lease.owner && (record.lease.expiresAt ?? 0) >= now) return { ...record, waitReason: `starting: claimed by ${record.lease.owner}` };
  if (row.concurrency_key !== null && row.key_active !== null && row.key_limit !== null && row.key_active >= row.key_limit) {
    return { ...record, waitReason: `concurrency key ${row.concurrency_key}: ${row.key_active} of ${row.key_limit} active` };
  }
  return { ...record, waitReason: 'waiting for a worker (agent-workflow serve)' };
}

interface LaunchRow {
  run_id: string;
  plan: Buffer;
  launch: Omit<QueuedLaunch, 'plan' | 'concurrencyLimit' | 'idempotencyKey'>;
  concurrency_limit: number;
}

export class PgOwnership implements RunOwnership {
  /** `s`: the quoted schema name. */
  /** The NOTIFY channel of this store (one per schema): `queue:<run id>` and `inbox:<run id>` payloads. */
  private readonly channel: string;

  constructor(
    private readonly pool: Pool,
    private readonly s: string,
  ) {
    // Identifiers are cut at 63 bytes; schema names are at most 63 of [a-z0-9_].
    this.channel = `${s.replace(/"/g, '').slice(0, 58)}_work`;
  }

  /**
   * Wake-ups through LISTEN on one connection of the pool, kept as long as the subscription lasts.
   * The server may drop that connection at any time (a restart, a failover, pg_terminate_backend):
   * the loss is reported (`events.lost`), the connection is replaced with back-off
   * (`pgLimits.listenRetryMsMin` doubling to `listenRetryMsMax`) and, once listening again, `events.restored`
   * is called and the listener woken once, since a notification sent meanwhile was missed. Work is
   * never lost meanwhile: workers and owners poll the store as well.
   */
  async subscribe(
    listener: (event: { channel: 'queue' | 'inbox'; runId?: string }) => void,
    events: { lost?(err: Error, retryInMs: number): void; restored?(): void } = {},
  ): Promise<() => Promise<void>> {
    const onNotification = (n: { channel: string; payload?: string }) => {
      if (n.channel !== this.channel || !n.payload) return;
      const sep = n.payload.indexOf(':');
      const kind = n.payload.slice(0, sep);
      if (kind === 'queue' || kind === 'inbox') listener({ channel: kind, runId: n.payload.slice(sep + 1) });
    };
    let stopped = false;
    let client: PoolClient | undefined;
    let retry: NodeJS.Timeout | undefined;
    let retryMs: number = pgLimits.listenRetryMsMin;
    const listen = async (): Promise<void> => {
      const c = await this.pool.connect();
      const onError = (err: Error) => {
        c.off('notification', onNotification);
        c.off('error', onError);
        if (client === c) client = undefined;
        c.release(err);
        if (stopped) return;
        events.lost?.(err, retryMs);
        scheduleRetry();
      };
      c.on('error', onError);
      c.on('notification', onNotification);
      try {
        await c.query(`LISTEN "${this.channel}"`);
      } catch (err) {
        c.off('notification', onNotification);
        c.off('error', onError);
        c.release(err as Error);
        throw err;
      }
      client = c;
    };
    const scheduleRetry = () => {
      retry = setTimeout(() => {
        retry = undefined;
        if (stopped) return;
        listen().then(
          () => {
            retryMs = pgLimits.listenRetryMsMin;
            if (stopped) return;
            events.restored?.();
            listener({ channel: 'queue' });
            listener({ channel: 'inbox' });
          },
          (err: Error) => {
            retryMs = Math.min(retryMs * 2, pgLimits.listenRetryMsMax);
            events.lost?.(err, retryMs);
            scheduleRetry();
          },
        );
      }, retryMs);
      retry.unref();
    };
    try {
      await listen();
    } catch (err) {
      throw new StoreError('store.io', `ownership: LISTEN failed: ${(err as Error).message}`);
    }
    return async () => {
      stopped = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = undefined;
      if (!c) return;
      c.off('notification', onNotification);
      await c.query(`UNLISTEN "${this.channel}"`).catch(() => undefined);
      c.release();
    };
  }

  /** Owners with unexpired leases whose processes are provably gone (this machine only). */
  private async deadOwners(now: number): Promise<string[]> {
    const owners = await statement<{ lease_owner: string }>(this.pool, 'ownership', { name: `${this.s}.liveOwners`, text: `SELECT DISTINCT lease_owner FROM ${this.s}.runs WHERE lease_owner IS NOT NULL AND lease_expires_at >= $1`, values: [now] });
    return owners.map((r) => r.lease_owner).filter((o) => ownerIsDead(o));
  }

  async acquireLease(runId: string, owner: string, ttlMs: number, now: number): Promise<LeaseGrant> {
    const s = this.s;
    return transaction(this.pool, 'ownership', async (c) => {
      const [row] = await rows<{ status: string; lease_owner: string | null; lease_epoch: number; lease_expires_at: number | null }>(c, {
        name: `${s}.leaseForUpdate`,
        text: `SELECT status, lease_owner, lease_epoch, lease_expires_at FROM ${s}.runs WHERE run_id = $1 FOR UPDATE`,
        values: [runId],
      });
      const decision = leaseDecision(runId, row, owner, now);
      if (decision.action === 'renew') await c.query({ name: `${s}.renewOne`, text: `UPDATE ${s}.runs SET lease_expires_at = $1 WHERE run_id = $2`, values: [now + ttlMs, runId] });
      if (decision.action === 'take') await c.query({ name: `${s}.takeOne`, text: `UPDATE ${s}.runs SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires_at = $2 WHERE run_id = $3`, values: [owner, now + ttlMs, runId] });
      return decision.grant;
    });
  }

  async renewLeases(owner: string, leases: ReadonlyMap<string, number>, ttlMs: number, now: number): Promise<string[]> {
    if (leases.size === 0) return [];
    const s = this.s;
    // One statement; rows are locked in run id order, as `commit` locks them, so the two never deadlock.
    const renewed = await statement<{ run_id: string }>(this.pool, 'ownership', {
      name: `${s}.renew`,
      text: `WITH held AS (
               SELECT r.run_id FROM ${s}.runs r JOIN unnest($1::text[], $2::bigint[]) AS l(run_id, epoch) ON r.run_id = l.run_id
                WHERE r.lease_owner = $3 AND r.lease_epoch = l.epoch ORDER BY r.run_id FOR UPDATE OF r)
             UPDATE ${s}.runs r SET lease_expires_at = $4 FROM held WHERE r.run_id = held.run_id RETURNING r.run_id`,
      values: [[...leases.keys()], [...leases.values()], owner, now + ttlMs],
    });
    const kept = new Set(renewed.map((r) => r.run_id));
    return [...leases.keys()].filter((id) => !kept.has(id));
  }

  async releaseLease(runId: string, owner: string, epoch: number): Promise<void> {
    await statement(this.pool, 'ownership', {
      name: `${this.s}.release`,
      text: `UPDATE ${this.s}.runs SET lease_owner = NULL, lease_expires_at = NULL WHERE run_id = $1 AND lease_owner = $2 AND lease_epoch = $3`,
      values: [runId, owner, epoch],
    });
  }

  async postCommand(runId: string, command: OperatorCommand, now: number): Promise<number> {
    const s = this.s;
    // A run that had already ended gets the command refused at once, with `postedAfterEnd`'s
    // error built from the run's row (a run that ends while the statement runs leaves it pending:
    // see `commandResult` of the runtime). Only a pending command wakes the owners.
    const ended = `r.status IN (${terminalStatusListSql})`;
    const [row] = await statement<{ id: number }>(this.pool, 'ownership', {
      name: `${s}.post`,
      text: `WITH posted AS (
               INSERT INTO ${s}.run_inbox (run_id, command, posted_at, state, applied_at, error)
               SELECT $1, $2::json, $3::bigint, CASE WHEN ${ended} THEN 'refused' ELSE 'pending' END, CASE WHEN ${ended} THEN $3::bigint END,
                      CASE WHEN ${ended} THEN json_build_object('code', 'run.terminal', 'message', 'run ' || $1::text || ' is ' || r.status || $5::text) END
                 FROM ${s}.runs r WHERE r.run_id = $1
               RETURNING id, state)
             SELECT id, CASE WHEN state = 'pending' THEN pg_notify($4, 'inbox:' || $1) END FROM posted`,
      values: [runId, JSON.stringify(command), now, this.channel, postedAfterEndSuffix],
    });
    if (!row) throw new StoreError('store.not-found', `run ${runId} does not exist in this store`);
    return row.id;
  }

  async pendingCommands(runIds: readonly string[], limit: number): Promise<InboxCommand[]> {
    if (runIds.length === 0 || limit <= 0) return [];
    const found = await statement<{ id: number; run_id: string; command: OperatorCommand; posted_at: number }>(this.pool, 'ownership', {
      name: `${this.s}.pending`,
      text: `SELECT id, run_id, command, posted_at FROM ${this.s}.run_inbox WHERE state = 'pending' AND run_id = ANY($1::text[]) ORDER BY id LIMIT $2`,
      values: [runIds, limit],
    });
    return found.map((r) => ({ id: r.id, runId: r.run_id, command: r.command, postedAt: r.posted_at }));
  }

  async refuseCommands(refusals: readonly { id: number; error: { code: string; message: string } }[], owner: string, now: number): Promise<void> {
    if (refusals.length === 0) return;
    await statement(this.pool, 'ownership', {
      name: `${this.s}.refuse`,
      text: `UPDATE ${this.s}.run_inbox b SET state = 'refused', error = f.error::json, applied_at = $3, applied_by = $4
               FROM unnest($1::bigint[], $2::text[]) AS f(id, error) WHERE b.id = f.id AND b.state = 'pending'`,
      values: [refusals.map((r) => r.id), refusals.map((r) => JSON.stringify(r.error)), now, owner],
    });
  }

  async commandResult(id: number): Promise<CommandResult | undefined> {
    const [row] = await statement<InboxResultRow>(this.pool, 'ownership', {
      name: `${this.s}.result`,
      text: `SELECT id, run_id, state, applied_at, applied_by, error FROM ${this.s}.run_inbox WHERE id = $1`,
      values: [id],
    });
    return row ? commandResultOf(row) : undefined;
  }

  async enqueue(launch: QueuedLaunch, now: number): Promise<{ runId: string; created: boolean }> {
    assertPortableId(launch.runId, 'run id');
    // Without an idempotency key the enqueue is one statement, atomic on its own: one round trip
    // instead of five (BEGIN, the run, its queue entry, the notification, COMMIT).
    if (launch.idempotencyKey === undefined) return queuedOutcome(launch, await statement(this.pool, 'ownership', this.insertQueued(launch, now)));
    return transaction(this.pool, 'ownership', (c) => this.enqueueIn(c, launch, now));
  }

  /** `enqueue` inside the caller's transaction (a trigger commits its ingress record in the same one). */
  async enqueueIn(c: PoolClient, launch: QueuedLaunch, now: number): Promise<{ runId: string; created: boolean }> {
    assertPortableId(launch.runId, 'run id');
    if (launch.idempotencyKey !== undefined) {
      // Two launches with one key at once: the second waits for the first, then finds its run.
      await c.query("SELECT pg_advisory_xact_lock(hashtext('agent-workflow.idempotency'), hashtext($1))", [launch.idempotencyKey]);
      const [existing] = await rows<{ run_id: string }>(c, { name: `${this.s}.byIdempotencyKey`, text: `SELECT run_id FROM ${this.s}.run_queue WHERE idempotency_key = $1`, values: [launch.idempotencyKey] });
      if (existing) return { runId: existing.run_id, created: false };
    }
    return queuedOutcome(launch, await rows(c, this.insertQueued(launch, now)));
  }

  /**
   * The statement that writes the queued run's row, its queue entry and the notification that wakes
   * listening workers (sent when the transaction commits); it writes nothing, and answers no row,
   * when a run of that id exists.
   */
  private insertQueued(launch: QueuedLaunch, now: number): QueryConfig {
    const s = this.s;
    const { plan, concurrencyLimit, idempotencyKey, delivery, ...request } = launch;
    // `notified` is selected so that the notification runs: a `WITH` query that nothing reads is not.
    return {
      name: `${s}.enqueue`,
      text: `WITH run AS (
               INSERT INTO ${s}.runs (run_id, status, last_seq, plan, created_at, updated_at, concurrency_key, queued_at, delivery_target, delivery_digest) VALUES ($1, 'queued', 0, $2, $3, $3, $4, $3, $5::json, $6)
               ON CONFLICT (run_id) DO NOTHING RETURNING run_id
             ), queued AS (
               INSERT INTO ${s}.run_queue (run_id, launch, concurrency_limit, idempotency_key) SELECT run_id, $7::json, $8::integer, $9::text FROM run RETURNING run_id
             ), notified AS (
               SELECT pg_notify($10::text, 'queue:' || run_id) FROM queued
             )
             SELECT run_id, (SELECT count(*) FROM notified)::int AS notified FROM queued`,
      values: [launch.runId, Buffer.from(plan), now, launch.concurrencyKey ?? null, delivery ? JSON.stringify(delivery.target) : null, delivery?.digest ?? null, JSON.stringify({ ...request, queuedAt: now }), concurrencyLimit ?? 1, idempotencyKey ?? null, this.channel],
    };
  }

  private async launches(q: Pick<PoolClient, 'query'>, runIds: readonly string[]): Promise<Map<string, QueuedLaunch>> {
    const out = new Map<string, QueuedLaunch>();
    if (runIds.length === 0) return out;
    const found = await rows<LaunchRow>(q as PoolClient, {
      name: `${this.s}.queued`,
      text: `SELECT r.run_id, r.plan, q.launch, q.concurrency_limit FROM ${this.s}.runs r JOIN ${this.s}.run_queue q USING (run_id) WHERE r.run_id = ANY($1::text[])`,
      values: [runIds],
    });
    for (const r of found) out.set(r.run_id, { ...r.launch, plan: r.plan, concurrencyLimit: r.concurrency_limit } as QueuedLaunch);
    return out;
  }

  async queuedLaunch(runId: string): Promise<QueuedLaunch | undefined> {
    try {
      return (await this.launches(this.pool, [runId])).get(runId);
    } catch (err) {
      throw new StoreError('store.io', `ownership: ${(err as Error).message}`);
    }
  }

  async claim(owner: string, limit: number, ttlMs: number, now: number): Promise<ClaimedRun[]> {
    if (limit <= 0) return [];
    // Asked on another connection while the claim runs: an owner found dead stays dead. The claim
    // uses the owners found dead so far; when this answer adds one, it claims again with it. A
    // failed answer adds none (the runs this claim took are still this worker's to start).
    const known = this.knownDead;
    const deadOwners = this.deadOwners(now).catch(() => known);
    let claimed = await this.claimAtOnce(owner, limit, ttlMs, now, known);
    const dead = await deadOwners;
    this.knownDead = dead;
    const newlyDead = dead.some((o) => !known.includes(o));
    if (claimed === undefined) return this.claimLocked(owner, limit, ttlMs, now, dead);
    if (newlyDead && claimed.length < limit) {
      const more = await this.claimAtOnce(owner, limit - claimed.length, ttlMs, now, dead);
      claimed = [...claimed, ...(more ?? (await this.claimLocked(owner, limit - claimed.length, ttlMs, now, dead)))];
    }
    return claimed;
  }

  /** Owners of leases this process found dead at its last claim (a dead process stays dead). */
  private knownDead: string[] = [];

  /**
   * The claim in one statement: runs to take over, then queued runs without a concurrency key,
   * while no queued run with a key could be admitted. Answers undefined when one could (having
   * taken nothing): the locked claim then admits runs key by key under its advisory lock.
   */
  private async claimAtOnce(owner: string, limit: number, ttlMs: number, now: number, dead: readonly string[]): Promise<ClaimedRun[] | undefined> {
    const s = this.s;
    const found = await statement<{ keyed: boolean; run_id: string | null; lease_epoch: number; last_seq: number; takeover: boolean; updated_at: number; queued_at: number; plan: Buffer; launch: LaunchRow['launch'] | null; concurrency_limit: number | null }>(this.pool, 'ownership', {
      name: `${s}.claimAtOnce`,
      text: `WITH k AS (
               SELECT EXISTS (SELECT 1 ${admissibleKeys(s)}) AS keyed
             ), tk AS (
               SELECT r.run_id FROM ${s}.runs r
                WHERE NOT (SELECT keyed FROM k) AND ${takeoverWhere(s)}
                ORDER BY r.updated_at LIMIT $3 FOR UPDATE OF r SKIP LOCKED
             ), qu AS (
               SELECT r.run_id FROM ${s}.runs r
                WHERE NOT (SELECT keyed FROM k) AND r.status = 'queued' AND r.concurrency_key IS NULL AND ${claimable}
                ORDER BY r.queued_at, r.run_id LIMIT GREATEST($3::int - (SELECT count(*) FROM tk), 0) FOR UPDATE OF r SKIP LOCKED
             ), t AS (
               UPDATE ${s}.runs SET lease_owner = $4, lease_epoch = lease_epoch + 1, lease_expires_at = $5
                WHERE run_id IN (SELECT run_id FROM tk UNION ALL SELECT run_id FROM qu)
                RETURNING run_id, lease_epoch, last_seq, plan, updated_at, queued_at
             )
             SELECT k.keyed, t.run_id, t.lease_epoch, t.last_seq, t.run_id IN (SELECT run_id FROM tk) AS takeover, t.updated_at, t.queued_at, t.plan, q.launch, q.concurrency_limit
               FROM k LEFT JOIN (t LEFT JOIN ${s}.run_queue q USING (run_id)) ON true`,
      values: [now, dead, limit, owner, now + ttlMs],
    });
    if (found[0]?.keyed) return undefined;
    const claimed: ClaimedRun[] = [];
    // Takeovers first (oldest update first), then queued runs (oldest first), as the locked claim orders them.
    const order = (a: (typeof found)[number], b: (typeof found)[number]) =>
      a.takeover ? a.updated_at - b.updated_at : a.queued_at - b.queued_at || (a.run_id! < b.run_id! ? -1 : a.run_id! > b.run_id! ? 1 : 0);
    for (const takeover of [true, false]) {
      for (const r of found.filter((f) => f.run_id !== null && f.takeover === takeover).sort(order)) {
        const launch = r.launch !== null ? launchOfRow(r.launch, r.plan, r.concurrency_limit) : undefined;
        const start = launch !== undefined && (!takeover || r.last_seq === 0);
        claimed.push(start ? { runId: r.run_id!, epoch: r.lease_epoch, kind: 'start', launch } : { runId: r.run_id!, epoch: r.lease_epoch, kind: 'takeover' });
      }
    }
    return claimed;
  }

  /** The claim in one transaction: takeovers, then queued runs, admitted key by key under the key's advisory lock. */
  private async claimLocked(owner: string, limit: number, ttlMs: number, now: number, dead: readonly string[]): Promise<ClaimedRun[]> {
    const s = this.s;
    return transaction(this.pool, 'ownership', async (c) => {
      const claimed: ClaimedRun[] = [];
      const takeovers = await rows<{ run_id: string; last_seq: number; lease_epoch: number }>(c, {
        name: `${s}.takeoverCandidates`,
        text: `SELECT r.run_id, r.last_seq, r.lease_epoch FROM ${s}.runs r
                WHERE ${takeoverWhere(s)}
                ORDER BY r.updated_at LIMIT $3 FOR UPDATE OF r SKIP LOCKED`,
        values: [now, dead, limit],
      });
      const taken = await this.take(c, owner, now + ttlMs, takeovers.map((r) => r.run_id));
      for (const r of takeovers) {
        const t = taken.get(r.run_id);
        if (t === undefined) continue;
        claimed.push(r.last_seq === 0 && t.launch ? { runId: r.run_id, epoch: t.epoch, kind: 'start', launch: t.launch } : { runId: r.run_id, epoch: t.epoch, kind: 'takeover' });
      }
      if (claimed.length >= limit) return claimed;
      const room = limit - claimed.length;

      // Queued runs, oldest first. Runs without a key: lock what is free, skip what another
      // claimer holds. Runs with a key: under the key's advisory lock, count its active runs and
      // admit its oldest waiting runs while the count stays under their limit (FIFO per key: once
      // the oldest waiting run of a key cannot start, no later one of that key may).
      const picked: { run_id: string; queued_at: number }[] = await rows<{ run_id: string; queued_at: number }>(c, {
        name: `${s}.lockUnkeyed`,
        text: `SELECT r.run_id, r.queued_at FROM ${s}.runs r WHERE r.status = 'queued' AND r.concurrency_key IS NULL AND ${claimable}
                ORDER BY r.queued_at, r.run_id LIMIT $3 FOR UPDATE OF r SKIP LOCKED`,
        values: [now, dead, room],
      });
      const keyRows = await rows<{ concurrency_key: string }>(c, {
        name: `${s}.waitingKeys`,
        // Keys seen at capacity in this snapshot are left for a later claim (checked again under the lock otherwise).
        text: `SELECT r.concurrency_key ${admissibleKeys(s)}
                ORDER BY min(r.queued_at) LIMIT $3`,
        values: [now, dead, room * 4 + 16],
      });
      const keys = keyRows.map((r) => r.concurrency_key).sort();
      for (const key of keys) {
        if (picked.length >= room * 2) break;
        await c.query({ name: `${s}.keyLock`, text: 'SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', values: [s, key] });
        const waiting = await rows<{ run_id: string; queued_at: number; concurrency_limit: number; active: number }>(c, {
          name: `${s}.keyHead`,
          text: `SELECT r.run_id, r.queued_at, q.concurrency_limit,
                        ${keyActiveCount(s, '$3')} AS active
                   FROM ${s}.runs r JOIN ${s}.run_queue q USING (run_id)
                  WHERE r.concurrency_key = $3 AND r.status = 'queued' AND ${claimable}
                  ORDER BY r.queued_at, r.run_id LIMIT $4 FOR UPDATE OF r`,
          values: [now, dead, key, room],
        });
        let active = waiting[0]?.active ?? 0;
        for (const r of waiting) {
          if (active >= r.concurrency_limit) break;
          picked.push(r);
          active++;
        }
      }
      // Oldest first across keys; a key's admitted runs are a prefix of its FIFO order, so cutting keeps FIFO.
      picked.sort((a, b) => a.queued_at - b.queued_at || (a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0));
      const chosen = picked.slice(0, room).map((r) => r.run_id);
      const started = await this.take(c, owner, now + ttlMs, chosen);
      for (const runId of chosen) {
        const t = started.get(runId);
        if (t === undefined) continue;
        claimed.push(t.launch ? { runId, epoch: t.epoch, kind: 'start', launch: t.launch } : { runId, epoch: t.epoch, kind: 'takeover' });
      }
      return claimed;
    });
  }

  /** Takes the leases of runs this transaction has locked; answers their new epochs and, for queued runs, their launch. */
  private async take(c: PoolClient, owner: string, expiresAt: number, runIds: readonly string[]): Promise<Map<string, { epoch: number; launch?: QueuedLaunch }>> {
    if (runIds.length === 0) return new Map();
    const s = this.s;
    const taken = await rows<{ run_id: string; lease_epoch: number; plan: Buffer; launch: LaunchRow['launch'] | null; concurrency_limit: number | null }>(c, {
      name: `${s}.take`,
      text: `WITH t AS (UPDATE ${s}.runs SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires_at = $2 WHERE run_id = ANY($3::text[]) RETURNING run_id, lease_epoch, plan)
             SELECT t.run_id, t.lease_epoch, t.plan, q.launch, q.concurrency_limit FROM t LEFT JOIN ${s}.run_queue q USING (run_id)`,
      values: [owner, expiresAt, runIds],
    });
    return new Map(
      taken.map((r) => [r.run_id, { epoch: r.lease_epoch, ...(r.launch !== null ? { launch: launchOfRow(r.launch, r.plan, r.concurrency_limit) } : {}) }]),
    );
  }

  async cancelQueued(runId: string, reason: string, by: string, now: number): Promise<boolean> {
    const outcome = JSON.stringify({ error: { code: 'run.cancelled', message: `${by} cancelled the run before it started: ${reason}` } });
    const changed = await statement(this.pool, 'ownership', {
      name: `${this.s}.cancelQueued`,
      text: `UPDATE ${this.s}.runs SET status = 'cancelled', updated_at = $1, outcome = $2::json WHERE run_id = $3 AND status = 'queued'
               AND (lease_owner IS NULL OR lease_expires_at < $1) RETURNING run_id`,
      values: [now, outcome, runId],
    });
    return changed.length > 0;
  }

  async refuseQueued(runId: string, lease: { owner: string; epoch: number }, error: { code: string; message: string }, now: number): Promise<boolean> {
    const changed = await statement(this.pool, 'ownership', {
      name: `${this.s}.refuseQueued`,
      text: `UPDATE ${this.s}.runs SET status = 'failed', updated_at = $1, outcome = $2::json, lease_owner = NULL, lease_expires_at = NULL
              WHERE run_id = $3 AND status = 'queued' AND lease_owner = $4 AND lease_epoch = $5 RETURNING run_id`,
      values: [now, JSON.stringify({ error }), runId, lease.owner, lease.epoch],
    });
    return changed.length > 0;
  }

  async serverTime(): Promise<number> {
    const [row] = await statement<{ t: number }>(this.pool, 'ownership', {
      name: `${this.s}.serverTime`,
      text: `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS t`,
      values: [],
    });
    return row.t;
  }

  async heartbeatWorker(record: WorkerRecord): Promise<void> {
    await statement(this.pool, 'ownership', {
      name: `${this.s}.worker`,
      text: `INSERT INTO ${this.s}.workers (owner, started_at, heartbeat_at, info) VALUES ($1, $2, $3, $4)
               ON CONFLICT (owner) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, info = excluded.info`,
      values: [record.owner, record.startedAt, record.heartbeatAt, record.info ?? null],
    });
  }

  async removeWorker(owner: string): Promise<void> {
    await statement(this.pool, 'ownership', { name: `${this.s}.removeWorker`, text: `DELETE FROM ${this.s}.workers WHERE owner = $1`, values: [owner] });
  }

  async liveWorkers(now: number, staleMs: number): Promise<WorkerRecord[]> {
    const found = await statement<{ owner: string; started_at: number; heartbeat_at: number; info: string | null }>(this.pool, 'ownership', {
      name: `${this.s}.liveWorkers`,
      text: `SELECT owner, started_at, heartbeat_at, info FROM ${this.s}.workers WHERE heartbeat_at >= $1 ORDER BY started_at`,
      values: [now - staleMs],
    });
    return found.filter((r) => !ownerIsDead(r.owner)).map((r) => ({ owner: r.owner, startedAt: r.started_at, heartbeatAt: r.heartbeat_at, ...(r.info !== null ? { info: r.info } : {}) }));
  }
}

/** What an enqueue answers from the rows of its statement: a row when the run was created. */
function queuedOutcome(launch: QueuedLaunch, inserted: readonly unknown[]): { runId: string; created: boolean } {
  return { runId: launch.runId, created: inserted.length > 0 };
}

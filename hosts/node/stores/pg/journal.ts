// The Node host's journal store on PostgreSQL, for several workers on several machines. The same
// contract and semantics as the SQLite store (`journal.ts`): one `commit` call is one transaction
// however many activations it holds (group commit), each entry guarded by a compare-and-set on the
// run's last seq and by the fencing rule, checked on the run's locked row.
//
// A group whose entries all hold is one statement (`commitAtOnce`): it locks the runs' rows
// (`SELECT ... FOR UPDATE`, in run id order), checks them against what the entries expect, and
// only then inserts new runs, updates the others, writes the checkpoints taken, appends every
// event and marks applied commands (data-modifying CTEs over arrays). Otherwise the group takes
// the locked transaction (`commitIn`), four round trips whatever its size: BEGIN; the same lock;
// the checks, entry by entry, here, because one of them (`ownerIsDead`) can only be answered by
// this machine; one statement for the accepted entries; COMMIT.
import { sha256Digest } from '../../../shared/digest.js';
import type { Pool, PoolClient } from 'pg';
import { assertPortableId, StoreError, type ArtifactRef, type CommitEntry, type CommitRejection, type EventPage, type JournalStore, type RunListFilter, type RunRecord, type RunTail } from '../../../core/store.js';
import type { StoredArtifactInfo } from '../bundle.js';
import { openedArtifact, type ArtifactCodec } from '../../artifacts/codec.js';
import type { RunProjection } from '../../../core/types.js';
import { PgCatalogStorage } from './catalog.js';
import { PgTriggerStorage } from './triggers.js';
import { migratePg, quoteSchema } from './migrations.js';
import { PgOwnership, pgRunRecordOf, runRecordColumns, type PgRunRow } from './ownership.js';
import { PgDeliveries } from './deliveries.js';
import { createPool, rows, statement, transaction } from './pool.js';
import { checkpointOf, splitEvents } from '../sqlite/journal.js';
import { checkpointInRow } from '../sqlite/migrations.js';
import { fencingRefusal } from '../lease-rules.js';

export interface PostgresStoreOptions {
  /** The PostgreSQL schema holding the store's tables (created when missing); default `agent_workflow`. */
  schema?: string;
  /** Connections of the pool; default 10. */
  poolSize?: number;
  now?: () => number;
  /** Seals artifacts at rest and opens sealed ones (hosts/node/artifacts/codec.ts). */
  artifactCodec?: ArtifactCodec;
}

export const defaultPgSchema = 'agent_workflow';


function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A run's row as this group commit leaves it: what is written at the end, in one statement. */
interface RunWrite {
  insert: boolean;
  status: string;
  lastSeq: number;
  checkpoint: Buffer | null;
  /** With `checkpoint`: the seq it was taken at. */
  checkpointSeq: number | null;
  plan: Buffer | null;
  outcome: string | null;
  wakeAt: number | null;
  /** The lease as it stands after the entries (`release` clears the owner). */
  owner: string | null;
  epoch: number;
  expiresAt: number | null;
  release: boolean;
  /** On a new run: its delivery target (JSON) and digest. */
  deliveryTarget?: string | null;
  deliveryDigest?: string | null;
  /** Indexes of the entries folded into this write (rejected together if the insert loses a race). */
  entries: number[];
}

interface Head {
  lastSeq: number;
  owner: string | null;
  epoch: number;
  expiresAt: number | null;
}

/** A commit group folded run by run: what to write, and the entries refused against `heads`. */
interface FoldedGroup {
  writes: Map<string, RunWrite>;
  rejected: (CommitRejection & { index: number })[];
  events: { runIds: string[]; seqs: number[]; bodies: Buffer[] };
  applied: { ids: number[]; runIds: string[]; by: (string | null)[] };
}

/**
 * Checks each entry against its run's head and folds the accepted ones into one write per run.
 * `heads` holds the runs' rows as found (absent: no such run) and is moved on as the entries
 * leave them: a group may hold several activations of one run.
 */
function foldEntries(entries: readonly CommitEntry[], heads: Map<string, Head>, now: number): FoldedGroup {
  const writes = new Map<string, RunWrite>();
  const rejected: (CommitRejection & { index: number })[] = [];
  const events = { runIds: [] as string[], seqs: [] as number[], bodies: [] as Buffer[] };
  const applied = { ids: [] as number[], runIds: [] as string[], by: [] as (string | null)[] };

  entries.forEach((e, index) => {
    const head = heads.get(e.runId);
    const stored = head?.lastSeq ?? 0;
    // A queued run has a row (with its plan) but no events: its first commit carries the plan too.
    const fresh = head === undefined || stored === 0;
    // Fencing first: a writer that lost the run is told so (`store.fenced`), whatever the seq, so
    // that it hands the outcomes it holds to the run's inbox instead of taking a seq conflict
    // for a race it can win on a reload (docs/durability.md, "Late receipts").
    if (head !== undefined) {
      const refusal = fencingRefusal(e, head, now);
      if (refusal) {
        rejected.push({ index, runId: e.runId, code: 'store.fenced', message: refusal });
        return;
      }
    }
    if (stored !== e.expectedSeq || (fresh && !e.plan) || (!fresh && e.plan)) {
      rejected.push({ index, runId: e.runId, code: 'store.conflict', message: `run ${e.runId}: expected last seq ${e.expectedSeq}, the store has ${head === undefined ? 'no such run' : stored}` });
      return;
    }
    const lines = splitEvents(e.events);
    if (lines.length !== e.lastSeq - e.expectedSeq) {
      throw new StoreError('store.corrupt', `run ${e.runId}: commit carries ${lines.length} events for seq ${e.expectedSeq + 1}..${e.lastSeq}`);
    }
    const release = e.releaseLease === true;
    let write = writes.get(e.runId);
    if (head === undefined) {
      assertPortableId(e.runId, 'run id');
      const owner = e.lease && !release ? e.lease.owner : null;
      write = {
        insert: true,
        status: e.status,
        lastSeq: e.lastSeq,
        checkpoint: null,
        checkpointSeq: null,
        plan: toBuffer(e.plan!),
        outcome: null,
        wakeAt: null,
        owner,
        epoch: e.lease?.epoch ?? 0,
        expiresAt: owner ? (e.lease?.expiresAt ?? now) : null,
        release: false,
        deliveryTarget: e.delivery ? JSON.stringify(e.delivery.target) : null,
        deliveryDigest: e.delivery?.digest ?? null,
        entries: [],
      };
      writes.set(e.runId, write);
    } else if (write === undefined) {
      // A queued run keeps the plan it was enqueued with.
      write = { insert: false, status: e.status, lastSeq: e.lastSeq, checkpoint: null, checkpointSeq: null, plan: null, outcome: null, wakeAt: null, owner: head.owner, epoch: head.epoch, expiresAt: head.expiresAt, release: false, entries: [] };
      writes.set(e.runId, write);
    }
    write.status = e.status;
    write.lastSeq = e.lastSeq;
    write.outcome = e.outcome ? JSON.stringify(e.outcome) : null;
    write.wakeAt = e.outcome?.wakeAt ?? null;
    if (e.checkpoint) {
      write.checkpoint = toBuffer(e.checkpoint);
      write.checkpointSeq = e.lastSeq;
    }
    if (release) {
      write.release = true;
      write.owner = null;
      write.expiresAt = null;
    }
    write.entries.push(index);
    heads.set(e.runId, { lastSeq: e.lastSeq, owner: write.owner, epoch: write.epoch, expiresAt: write.expiresAt });
    for (let i = 0; i < lines.length; i++) {
      events.runIds.push(e.runId);
      events.seqs.push(e.expectedSeq + 1 + i);
      events.bodies.push(lines[i]);
    }
    for (const id of e.appliedCommands ?? []) {
      applied.ids.push(id);
      applied.runIds.push(e.runId);
      applied.by.push(e.lease?.owner ?? null);
    }
  });
  return { writes, rejected, events, applied };
}

/**
 * The CTEs both commit statements end with, over arrays at the parameter numbers `p` names: large
 * checkpoints into their own table (schema v10), a small one replacing a large one before it,
 * every event, the inbox commands applied, and the commit notification for followers in other
 * processes (sent when the transaction commits). `guard` adds each write's condition, given the
 * column that names its run (none for the statements that need no per-run condition).
 */
function groupWritesSql(s: string, p: { events: number; applied: number; channel: number; large: number; inlined: number }, guard: (runId?: string) => string): string {
  return `cp AS (
                 INSERT INTO ${s}.checkpoints (run_id, seq, body)
                 SELECT c.run_id, c.seq, c.body FROM unnest($${p.large}::text[], $${p.large + 1}::bigint[], $${p.large + 2}::bytea[]) AS c(run_id, seq, body)
                  WHERE ${guard('c.run_id')}
                 ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, body = excluded.body
               ), cpd AS (
                 DELETE FROM ${s}.checkpoints WHERE run_id = ANY($${p.inlined}::text[]) AND ${guard()}
               ), ev AS (
                 INSERT INTO ${s}.events (run_id, seq, body)
                 SELECT e.run_id, e.seq, e.body FROM unnest($${p.events}::text[], $${p.events + 1}::bigint[], $${p.events + 2}::bytea[]) AS e(run_id, seq, body)
                  WHERE ${guard('e.run_id')}
               ), ap AS (
                 UPDATE ${s}.run_inbox b SET state = 'applied', applied_at = $1::bigint, applied_by = a.by
                   FROM unnest($${p.applied}::bigint[], $${p.applied + 1}::text[], $${p.applied + 2}::text[]) AS a(id, run_id, by)
                  WHERE b.id = a.id AND b.run_id = a.run_id AND b.state = 'pending' AND ${guard('a.run_id')}
               ), nt AS (
                 SELECT pg_notify($${p.channel}::text, n.payload) FROM unnest($${p.channel + 1}::text[]) AS n(payload) WHERE ${guard()}
               )`;
}

/** The columns of run rows a commit writes, as arrays in parameter order: id, status, last seq, checkpoint seq, small checkpoint, plan, outcome, wake time, lease owner, epoch, expiry. */
function runColumns(runs: readonly [string, RunWrite][]): unknown[] {
  return [
    runs.map(([id]) => id),
    runs.map(([, w]) => w.status),
    runs.map(([, w]) => w.lastSeq),
    runs.map(([, w]) => w.checkpointSeq),
    runs.map(([, w]) => (w.checkpoint !== null && checkpointInRow(w.checkpoint) ? w.checkpoint : null)),
    runs.map(([, w]) => w.plan),
    runs.map(([, w]) => w.outcome),
    runs.map(([, w]) => w.wakeAt),
    runs.map(([, w]) => w.owner),
    runs.map(([, w]) => w.epoch),
    runs.map(([, w]) => w.expiresAt),
  ];
}

/** The insert of new runs' rows from `i`, a relation of the group's runs (`FROM` follows). */
const runInsert = (s: string): string =>
  `INSERT INTO ${s}.runs (run_id, status, last_seq, checkpoint_seq, checkpoint, plan, created_at, updated_at, outcome, wake_at, lease_owner, lease_epoch, lease_expires_at, delivery_target, delivery_digest)
                 SELECT i.run_id, i.status, i.last_seq, COALESCE(i.checkpoint_seq, 0), i.checkpoint, i.plan, $1::bigint, $1::bigint, i.outcome::json, i.wake_at, i.lease_owner, i.lease_epoch, i.lease_expires_at, i.delivery_target::json, i.delivery_digest`;

/** The update of existing runs' rows `r` from `u`, a relation of the group's runs (`FROM` follows). */
const runUpdate = (s: string): string =>
  `UPDATE ${s}.runs r SET status = u.status, last_seq = u.last_seq, updated_at = $1::bigint, outcome = u.outcome::json, wake_at = u.wake_at,
                        checkpoint = CASE WHEN u.checkpoint_seq IS NULL THEN r.checkpoint ELSE u.checkpoint END,
                        checkpoint_seq = COALESCE(u.checkpoint_seq, r.checkpoint_seq),
                        lease_owner = CASE WHEN u.release THEN NULL ELSE r.lease_owner END,
                        lease_expires_at = CASE WHEN u.release THEN NULL ELSE r.lease_expires_at END`;

/** A commit that raced another (a run created meanwhile, a deadlock, a serialization failure). */
const racedCodes = new Set(['23505', '40P01', '40001']);

export class PostgresJournalStore implements JournalStore {
  /** Leases, inbox, queue and workers, in the same schema (see `RunOwnership`). */
  readonly ownership: PgOwnership;
  /** The outbox of result deliveries, in the same schema (see `DeliveryOutbox`). */
  readonly deliveries: PgDeliveries;
  private readonly now: () => number;
  private readonly codec: ArtifactCodec | undefined;
  private readonly s: string;
  /** The NOTIFY channel of commits (one per schema), payload `<last seq>:<run id>`. */
  private readonly commitChannel: string;

  private constructor(
    private readonly pool: Pool,
    readonly schema: string,
    options: PostgresStoreOptions,
  ) {
    this.s = quoteSchema(schema);
    this.now = options.now ?? Date.now;
    this.codec = options.artifactCodec;
    this.ownership = new PgOwnership(pool, this.s);
    this.deliveries = new PgDeliveries(pool, this.s);
    // Identifiers are cut at 63 bytes; schema names are at most 63 of [a-z0-9_].
    this.commitChannel = `${schema.slice(0, 55)}_commits`;
  }

  /**
   * Calls `listener` with the run id and last seq of every commit of any process on this store,
   * once its transaction committed (LISTEN/NOTIFY on one connection of the pool, kept while the
   * subscription lasts). A lost connection ends the notifications without an error: `onLost` is
   * called, and the follower falls back to reading the run records.
   */
  async subscribeCommits(listener: (runId: string, lastSeq: number) => void, onLost?: (err: Error) => void): Promise<() => Promise<void>> {
    const client = await this.pool.connect();
    let lost = false;
    const onNotification = (n: { channel: string; payload?: string }) => {
      if (n.channel !== this.commitChannel || !n.payload) return;
      const sep = n.payload.indexOf(':');
      const seq = Number(n.payload.slice(0, sep));
      if (sep > 0 && Number.isSafeInteger(seq)) listener(n.payload.slice(sep + 1), seq);
    };
    const onError = (err: Error) => {
      if (lost) return;
      lost = true;
      client.off('notification', onNotification);
      onLost?.(err);
    };
    client.on('notification', onNotification);
    client.on('error', onError);
    try {
      await client.query(`LISTEN "${this.commitChannel}"`);
    } catch (err) {
      client.off('error', onError);
      client.release(err as Error);
      throw new StoreError('store.io', `LISTEN for commits failed: ${(err as Error).message}`);
    }
    return async () => {
      client.off('notification', onNotification);
      if (!lost) await client.query(`UNLISTEN "${this.commitChannel}"`).catch(() => undefined);
      client.off('error', onError);
      client.release(lost ? new Error('the connection was lost') : undefined);
    };
  }

  /** Connects, creates the schema when missing and applies pending migrations. */
  static async open(connectionString: string, options: PostgresStoreOptions = {}): Promise<PostgresJournalStore> {
    const schema = options.schema ?? defaultPgSchema;
    quoteSchema(schema);
    const pool = createPool(connectionString, options.poolSize ?? 10);
    try {
      await migratePg(pool, schema);
    } catch (err) {
      await pool.end().catch(() => {});
      throw err;
    }
    return new PostgresJournalStore(pool, schema, options);
  }

  async commit(entries: readonly CommitEntry[]): Promise<CommitRejection[]> {
    if (entries.length === 0) return [];
    // The common case, a group whose entries all hold, is one statement; a group with an entry
    // that must be refused, or that a check needs this machine for, takes the locked path.
    if (await this.commitAtOnce(entries)) return [];
    return transaction(this.pool, 'commit failed', (c) => this.commitIn(c, entries));
  }

  /**
   * Commits the group in one statement when every entry holds against the rows it finds, and
   * answers true; answers false, having written nothing, when one does not (or may not: a lease
   * held by an owner this machine might know to be dead), or when another commit raced it
   * (a run created meanwhile, a deadlock), so that the locked path decides entry by entry.
   */
  private async commitAtOnce(entries: readonly CommitEntry[]): Promise<boolean> {
    const now = this.now();
    // The heads each run's first entry expects: a fresh entry (expected seq 0) creates the run or
    // starts a queued one, which the statement tells apart; a later one finds the run at its seq
    // under its own lease. The statement checks these assumptions on the locked rows.
    const heads = new Map<string, Head>();
    const expected = new Map<string, { seq: number; lease?: { owner: string; epoch: number } }>();
    for (const e of entries) {
      const first = expected.get(e.runId);
      if (first) {
        // Heads are assumed, not read: a later entry under another lease than the first is left to the locked path.
        if (first.lease?.owner !== e.lease?.owner || first.lease?.epoch !== e.lease?.epoch) return false;
        continue;
      }
      expected.set(e.runId, { seq: e.expectedSeq, lease: e.lease });
      if (e.expectedSeq > 0) heads.set(e.runId, { lastSeq: e.expectedSeq, owner: e.lease?.owner ?? null, epoch: e.lease?.epoch ?? 0, expiresAt: null });
    }
    const group = foldEntries(entries, heads, now);
    if (group.rejected.length > 0) return false;
    const runs = [...group.writes];
    const inlined = (w: RunWrite) => w.checkpoint !== null && checkpointInRow(w.checkpoint);
    const large = runs.filter(([, w]) => w.checkpoint !== null && !inlined(w));
    const s = this.s;
    const ok = (cond = '') => `${cond}${cond ? ' AND ' : ''}(SELECT ok FROM ok)`;
    try {
      const { rows: [row] } = await this.pool.query<{ ok: boolean }>({
        name: `${s}.commitAtOnce`,
        text: `WITH lk AS (
                 SELECT run_id, last_seq, lease_owner, lease_epoch, lease_expires_at FROM ${s}.runs WHERE run_id = ANY($2::text[]) ORDER BY run_id FOR UPDATE
               ), w AS MATERIALIZED (
                 -- Each run of the group once: its row as the group leaves it, and what its first entry expects.
                 SELECT * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bytea[], $7::bytea[], $8::text[], $9::bigint[], $10::text[], $11::bigint[], $12::bigint[], $13::boolean[], $14::text[], $15::text[], $16::bigint[], $17::boolean[], $18::text[], $19::bigint[])
                   AS w(run_id, status, last_seq, checkpoint_seq, checkpoint, plan, outcome, wake_at, lease_owner, lease_epoch, lease_expires_at, release, delivery_target, delivery_digest, expected, leased, expected_owner, expected_epoch)
               ), ok AS (
                 -- Each run as its first entry expects it: absent or queued for a fresh entry, else
                 -- at the expected seq; under the entry's lease, or under no live lease at all.
                 SELECT COALESCE(bool_and(CASE WHEN lk.run_id IS NULL THEN g.expected = 0
                          ELSE lk.last_seq = g.expected AND CASE WHEN g.leased THEN lk.lease_owner IS NOT DISTINCT FROM g.expected_owner AND lk.lease_epoch = g.expected_epoch
                                                                 ELSE lk.lease_owner IS NULL OR lk.lease_expires_at IS NULL OR lk.lease_expires_at < $1::bigint END
                          END), false) AS ok
                   FROM w g LEFT JOIN lk USING (run_id)
               ), ins AS (
                 -- No ON CONFLICT: a run another transaction creates meanwhile fails the statement.
                 ${runInsert(s)}
                   FROM w i WHERE ${ok('i.plan IS NOT NULL AND i.run_id NOT IN (SELECT run_id FROM lk)')}
               ), upd AS (
                 ${runUpdate(s)}
                   FROM w u WHERE ${ok('r.run_id = u.run_id')}
               ), ${groupWritesSql(s, { events: 20, applied: 23, channel: 26, large: 28, inlined: 31 }, () => ok())}
               SELECT ok, (SELECT count(*) FROM nt) AS notified FROM ok`,
        values: [
          now,
          ...runColumns(runs),
          runs.map(([, w]) => w.release),
          runs.map(([, w]) => w.deliveryTarget ?? null),
          runs.map(([, w]) => w.deliveryDigest ?? null),
          runs.map(([id]) => expected.get(id)!.seq),
          runs.map(([id]) => expected.get(id)!.lease !== undefined),
          runs.map(([id]) => expected.get(id)!.lease?.owner ?? null),
          runs.map(([id]) => expected.get(id)!.lease?.epoch ?? null),
          group.events.runIds,
          group.events.seqs,
          group.events.bodies,
          group.applied.ids,
          group.applied.runIds,
          group.applied.by,
          this.commitChannel,
          runs.map(([id, w]) => `${w.lastSeq}:${id}`),
          large.map(([id]) => id),
          large.map(([, w]) => w.checkpointSeq),
          large.map(([, w]) => w.checkpoint),
          runs.filter(([, w]) => inlined(w)).map(([id]) => id),
        ],
      });
      return row?.ok === true;
    } catch (err) {
      // A race the locked path reports entry by entry; anything else is the store's failure.
      const code = (err as { code?: string }).code;
      if (code !== undefined && racedCodes.has(code)) return false;
      throw new StoreError('store.io', `commit failed: ${(err as Error).message}`);
    }
  }

  private async commitIn(c: PoolClient, entries: readonly CommitEntry[]): Promise<CommitRejection[]> {
    const s = this.s;
    const now = this.now();
    const ids = [...new Set(entries.map((e) => e.runId))];
    const locked = await rows<{ run_id: string; last_seq: number; lease_owner: string | null; lease_epoch: number; lease_expires_at: number | null }>(c, {
      name: `${s}.runHeads`,
      text: `SELECT run_id, last_seq, lease_owner, lease_epoch, lease_expires_at FROM ${s}.runs WHERE run_id = ANY($1::text[]) ORDER BY run_id FOR UPDATE`,
      values: [ids],
    });
    const heads = new Map<string, Head>(locked.map((r) => [r.run_id, { lastSeq: r.last_seq, owner: r.lease_owner, epoch: r.lease_epoch, expiresAt: r.lease_expires_at }]));
    const { writes, rejected, events, applied } = foldEntries(entries, heads, now);

    if (writes.size > 0) {
      const ins = [...writes].filter(([, w]) => w.insert);
      const upd = [...writes].filter(([, w]) => !w.insert);
      // A large checkpoint goes into `checkpoints`, a small one into the run's row (schema v10).
      const inlined = (w: RunWrite) => w.checkpoint !== null && checkpointInRow(w.checkpoint);
      const large = [...writes].filter(([, w]) => w.checkpoint !== null && !inlined(w));
      const inserted = await rows<{ run_id: string }>(c, {
        name: `${s}.commitGroup`,
        text: `WITH ins AS (
                 ${runInsert(s)}
                   FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bytea[], $7::bytea[], $8::text[], $9::bigint[], $10::text[], $11::bigint[], $12::bigint[], $27::text[], $28::text[])
                     AS i(run_id, status, last_seq, checkpoint_seq, checkpoint, plan, outcome, wake_at, lease_owner, lease_epoch, lease_expires_at, delivery_target, delivery_digest)
                 ON CONFLICT (run_id) DO NOTHING
                 RETURNING run_id
               ), upd AS (
                 ${runUpdate(s)}
                   FROM unnest($13::text[], $14::text[], $15::bigint[], $16::text[], $17::bigint[], $18::bytea[], $19::bigint[], $20::boolean[])
                     AS u(run_id, status, last_seq, outcome, wake_at, checkpoint, checkpoint_seq, release)
                  WHERE r.run_id = u.run_id
               ), ${groupWritesSql(s, { events: 21, applied: 24, channel: 29, large: 31, inlined: 34 }, (runId) => (runId ? `(${runId} <> ALL($2::text[]) OR ${runId} IN (SELECT run_id FROM ins))` : 'true'))}
               SELECT run_id FROM ins
               UNION ALL
               SELECT NULL::text FROM (SELECT count(*) AS n FROM nt) z WHERE z.n < 0`,
        values: [
          now,
          ...runColumns(ins),
          upd.map(([id]) => id),
          upd.map(([, w]) => w.status),
          upd.map(([, w]) => w.lastSeq),
          upd.map(([, w]) => w.outcome),
          upd.map(([, w]) => w.wakeAt),
          upd.map(([, w]) => (inlined(w) ? w.checkpoint : null)),
          upd.map(([, w]) => w.checkpointSeq),
          upd.map(([, w]) => w.release),
          events.runIds,
          events.seqs,
          events.bodies,
          applied.ids,
          applied.runIds,
          applied.by,
          ins.map(([, w]) => w.deliveryTarget ?? null),
          ins.map(([, w]) => w.deliveryDigest ?? null),
          this.commitChannel,
          [...writes].map(([id, w]) => `${w.lastSeq}:${id}`),
          large.map(([id]) => id),
          large.map(([, w]) => w.checkpointSeq),
          large.map(([, w]) => w.checkpoint),
          upd.filter(([, w]) => inlined(w)).map(([id]) => id),
        ],
      });
      // A run another transaction created meanwhile: this group's entries for it did not commit.
      const created = new Set(inserted.filter((r) => r.run_id !== null).map((r) => r.run_id));
      for (const [runId, w] of ins) {
        if (created.has(runId)) continue;
        for (const index of w.entries) {
          rejected.push({ index, runId, code: 'store.conflict', message: `run ${runId}: expected last seq ${entries[index].expectedSeq}, the store has a run created concurrently` });
        }
      }
    }
    return rejected.sort((a, b) => a.index - b.index).map(({ index: _, ...r }) => r);
  }

  async load(runId: string): Promise<RunTail | undefined> {
    const s = this.s;
    // One statement, one snapshot: the row and the events after its checkpoint agree.
    const [row] = await statement<{ plan: Buffer; checkpoint_seq: number; last_seq: number; inline: Buffer | null; stored_seq: number | null; stored: Buffer | null; events: Buffer | null }>(this.pool, 'load', {
      name: `${s}.load`,
      text: `SELECT r.plan, r.checkpoint_seq, r.last_seq, r.checkpoint AS inline, c.seq AS stored_seq, c.body AS stored,
                    (SELECT string_agg(e.body, '\\x0a'::bytea ORDER BY e.seq) FROM ${s}.events e WHERE e.run_id = r.run_id AND e.seq > r.checkpoint_seq) AS events
               FROM ${s}.runs r LEFT JOIN ${s}.checkpoints c ON c.run_id = r.run_id WHERE r.run_id = $1`,
      values: [runId],
    });
    // A queued run that never started has no journal yet.
    if (!row || row.last_seq === 0) return undefined;
    const checkpoint = checkpointOf(runId, row.checkpoint_seq, row.inline, row.stored_seq, row.stored);
    return { plan: row.plan, checkpoint, events: row.events ?? Buffer.alloc(0), lastSeq: row.last_seq };
  }

  async readEvents(runId: string, afterSeq: number, limit: number): Promise<EventPage> {
    const found = await statement<{ seq: number; body: Buffer }>(this.pool, 'readEvents', {
      name: `${this.s}.eventsAfter`,
      text: `SELECT seq, body FROM ${this.s}.events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      values: [runId, afterSeq, limit + 1],
    });
    const more = found.length > limit;
    const page = more ? found.slice(0, limit) : found;
    return { events: page.map((r) => r.body.toString('utf8')), lastSeq: page.length > 0 ? page[page.length - 1].seq : afterSeq, more };
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const now = this.now();
    const [row] = await statement<PgRunRow>(this.pool, 'getRun', {
      name: `${this.s}.getRun`,
      text: `SELECT ${runRecordColumns(this.s)} FROM ${this.s}.runs r WHERE r.run_id = $2`,
      values: [now, runId],
    });
    return row ? pgRunRecordOf(row, now) : undefined;
  }

  async listRuns(filter: RunListFilter = {}): Promise<RunRecord[]> {
    const now = this.now();
    const statuses = filter.statuses ?? [];
    const found = await statement<PgRunRow>(this.pool, 'listRuns', {
      name: `${this.s}.listRuns`,
      text: `SELECT ${runRecordColumns(this.s)} FROM ${this.s}.runs r
              WHERE (cardinality($2::text[]) = 0 OR r.status = ANY($2::text[]))
                AND ($4::bigint IS NULL OR r.created_at < $4 OR (r.created_at = $4 AND r.run_id < $5::text))
                AND ($6::bigint IS NULL OR r.created_at >= $6)
                AND ($7::bigint IS NULL OR r.created_at < $7)
                AND ($8::text IS NULL OR left(r.run_id, length($8::text)) = $8::text)
                AND ($9::text IS NULL OR (CASE WHEN strpos($9::text, '@') > 0 THEN convert_from(r.plan, 'UTF8')::json ->> 'root' = $9::text
                                               ELSE left(convert_from(r.plan, 'UTF8')::json ->> 'root', length($9::text) + 1) = $9::text || '@' END))
                AND ($10::text IS NULL
                     OR ($10::text = 'trigger' AND r.run_id IN (SELECT i.run_id FROM ${this.s}.ingress_events i WHERE i.run_id IS NOT NULL AND i.status = 'launched'))
                     OR ($10::text = 'direct' AND r.run_id NOT IN (SELECT i.run_id FROM ${this.s}.ingress_events i WHERE i.run_id IS NOT NULL AND i.status = 'launched'))
                     OR ($10::text = 'binding' AND r.run_id IN (SELECT i.run_id FROM ${this.s}.ingress_events i
                                                                WHERE i.binding_id = $11::text AND i.status = 'launched' AND ($12::int IS NULL OR i.binding_revision = $12::int))))
                AND ($13::text IS NULL OR (r.status = 'paused' AND r.outcome ->> 'pausedReason' = $13::text))
                AND ($14::text IS NULL OR left(r.run_id, length($14::text)) = $14::text
                     OR r.run_id IN (SELECT i.run_id FROM ${this.s}.ingress_events i WHERE i.source_event_id = $14::text AND i.status = 'launched')
                     OR (length($14::text) >= 3 AND EXISTS (SELECT 1 FROM ${this.s}.events e WHERE e.run_id = r.run_id AND e.seq = 1
                                                            AND strpos((convert_from(e.body, 'UTF8')::json -> 'correlation')::text, $14::text) > 0)))
              ORDER BY r.created_at DESC, r.run_id DESC LIMIT $3`,
      values: [
        now,
        statuses,
        filter.limit ?? 100,
        filter.before?.createdAt ?? null,
        filter.before?.runId ?? null,
        filter.createdFrom ?? null,
        filter.createdTo ?? null,
        filter.runIdPrefix || null,
        filter.template || null,
        typeof filter.origin === 'object' ? 'binding' : (filter.origin ?? null),
        typeof filter.origin === 'object' ? filter.origin.bindingId : null,
        typeof filter.origin === 'object' ? (filter.origin.bindingRevision ?? null) : null,
        filter.pausedReason ?? null,
        filter.search || null,
      ],
    });
    return found.map((row) => pgRunRecordOf(row, now));
  }

  /** How many runs each status has. */
  async countRuns(): Promise<Record<string, number>> {
    const rows = await statement<{ status: string; n: number }>(this.pool, 'countRuns', {
      name: `${this.s}.countRuns`,
      text: `SELECT status, COUNT(*)::int AS n FROM ${this.s}.runs GROUP BY status ORDER BY status`,
      values: [],
    });
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }

  async keepProjection(runId: string, lastSeq: number, projection: RunProjection): Promise<void> {
    await statement(this.pool, 'keepProjection', {
      name: `${this.s}.keepProjection`,
      text: `UPDATE ${this.s}.runs SET outcome = $1::json, wake_at = $2 WHERE run_id = $3 AND last_seq = $4 AND outcome IS NULL`,
      values: [JSON.stringify(projection), projection.wakeAt ?? null, runId, lastSeq],
    });
  }

  async putArtifact(bytes: Uint8Array, mediaType: string): Promise<ArtifactRef> {
    const digest = sha256Digest(bytes);
    const stored = this.codec?.sealing ? this.codec.seal(bytes, digest) : bytes;
    await statement(this.pool, 'putArtifact', {
      name: `${this.s}.putArtifact`,
      // Storing the same bytes again refreshes `created_at` (when it was last stored): retention
      // never takes an artifact a run has just asked for (see `deleteArtifacts`).
      text: `INSERT INTO ${this.s}.artifacts (digest, size, media_type, bytes, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (digest) DO UPDATE SET created_at = GREATEST(${this.s}.artifacts.created_at, excluded.created_at)`,
      values: [digest, bytes.byteLength, mediaType, toBuffer(stored), this.now()],
    });
    return { digest, size: bytes.byteLength };
  }

  async getArtifact(digest: string): Promise<(ArtifactRef & { bytes: Uint8Array; mediaType: string; sealed?: Uint8Array }) | undefined> {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new StoreError('store.bad-id', `${JSON.stringify(digest)} is not an artifact digest`);
    const [row] = await statement<{ size: number; media_type: string; bytes: Buffer }>(this.pool, 'getArtifact', {
      name: `${this.s}.getArtifact`,
      text: `SELECT size, media_type, bytes FROM ${this.s}.artifacts WHERE digest = $1`,
      values: [digest],
    });
    if (!row) return undefined;
    return openedArtifact(this.codec, digest, Number(row.size), row.media_type, row.bytes);
  }

  /** A page of stored artifacts as kept (sealed or plain), by digest (key rotation). */
  async storedArtifacts(options: { limit: number; afterDigest?: string }): Promise<{ digest: string; bytes: Uint8Array }[]> {
    return statement<{ digest: string; bytes: Buffer }>(this.pool, 'storedArtifacts', {
      name: `${this.s}.storedArtifacts`,
      text: `SELECT digest, bytes FROM ${this.s}.artifacts WHERE digest > $1 ORDER BY digest LIMIT $2`,
      values: [options.afterDigest ?? '', options.limit],
    });
  }

  /** Replaces an artifact's stored bytes if they are still `from`; whether it did. */
  async replaceStoredArtifact(digest: string, from: Uint8Array, to: Uint8Array): Promise<boolean> {
    const rows = await statement<{ digest: string }>(this.pool, 'replaceStoredArtifact', {
      name: `${this.s}.replaceStoredArtifact`,
      text: `UPDATE ${this.s}.artifacts SET bytes = $1 WHERE digest = $2 AND bytes = $3 RETURNING digest`,
      values: [toBuffer(to), digest, toBuffer(from)],
    });
    return rows.length === 1;
  }

  async artifactsStoredBefore(cutoff: number, options: { limit: number; afterDigest?: string }): Promise<StoredArtifactInfo[]> {
    const rows = await statement<{ digest: string; size: number; created_at: string | number }>(this.pool, 'artifactsStoredBefore', {
      name: `${this.s}.artifactsStoredBefore`,
      text: `SELECT digest, size, created_at FROM ${this.s}.artifacts WHERE created_at < $1 AND digest > $2 ORDER BY digest LIMIT $3`,
      values: [cutoff, options.afterDigest ?? '', options.limit],
    });
    return rows.map((r) => ({ digest: r.digest, size: Number(r.size), storedAt: Number(r.created_at) }));
  }

  async deleteArtifacts(digests: readonly string[], cutoff: number): Promise<StoredArtifactInfo[]> {
    if (digests.length === 0) return [];
    // The age is checked again by the delete: a put of the same bytes since the listing (a run
    // that has just captured them) refreshed it, and PostgreSQL re-checks a row changed under it.
    const rows = await statement<{ digest: string; size: number; created_at: string | number }>(this.pool, 'deleteArtifacts', {
      name: `${this.s}.deleteArtifacts`,
      text: `DELETE FROM ${this.s}.artifacts WHERE digest = ANY($1::text[]) AND created_at < $2 RETURNING digest, size, created_at`,
      values: [digests, cutoff],
    });
    return rows.map((r) => ({ digest: r.digest, size: Number(r.size), storedAt: Number(r.created_at) }));
  }

  /** The workflow catalog's storage, in this store's schema (see `stores/pg/catalog.ts`). */
  catalogStorage(): PgCatalogStorage {
    return new PgCatalogStorage(this.pool, this.s);
  }

  /** Bindings and the ingress journal, in this store's schema (see `stores/pg/triggers.ts`). */
  triggerStorage(): PgTriggerStorage {
    return new PgTriggerStorage(this.pool, this.s, this.ownership);
  }

  private closed = false;

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

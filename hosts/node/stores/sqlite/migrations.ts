// Numbered, transactional migrations of the SQLite store. `user_version` holds the schema
// version. A migration never edits an earlier one: a new version gets a new entry.
import type { Database } from 'better-sqlite3';

/**
 * The largest checkpoint (bytes) a store keeps in the run's row (schema v10); a larger one goes
 * into `checkpoints`. A SQLite row holds ~4 KB before SQLite moves its tail to overflow pages; a
 * 2-step run's checkpoint is ~1 KB. Reading takes a checkpoint from either place whatever its size.
 */
export const checkpointInlineMax = 2048;

/** Whether a commit keeps this checkpoint in the run's row rather than in `checkpoints`. */
export function checkpointInRow(checkpoint: Uint8Array): boolean {
  return checkpoint.byteLength <= checkpointInlineMax;
}

export interface Migration {
  version: number;
  description: string;
  /** True when the migration drops or rewrites data: a copy of the file is kept before it runs. */
  destructive: boolean;
  up(db: Database): void;
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    description: 'runs, their pinned plans and checkpoints, and the event journal',
    destructive: false,
    up(db) {
      db.exec(`
        CREATE TABLE runs (
          run_id          TEXT PRIMARY KEY,
          status          TEXT NOT NULL,
          last_seq        INTEGER NOT NULL,
          checkpoint_seq  INTEGER NOT NULL DEFAULT 0,
          checkpoint      BLOB,
          plan            BLOB NOT NULL,
          created_at      INTEGER NOT NULL,
          updated_at      INTEGER NOT NULL
        );
        CREATE INDEX runs_by_status ON runs (status, updated_at);
        CREATE TABLE events (
          run_id  TEXT NOT NULL,
          seq     INTEGER NOT NULL,
          body    BLOB NOT NULL,
          PRIMARY KEY (run_id, seq)
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 2,
    description: 'workflow catalog: mutable drafts and immutable published revisions',
    destructive: false,
    up(db) {
      // `last_revision` is the highest revision ever published for the id: revision numbers are
      // never reused after a revision is deleted. `search_text` is a lower-cased projection of
      // id, name, description and labels, written with the row.
      db.exec(`
        CREATE TABLE workflow_drafts (
          workflow_id     TEXT PRIMARY KEY,
          draft_revision  INTEGER NOT NULL,
          template        BLOB NOT NULL,
          search_text     TEXT NOT NULL,
          last_revision   INTEGER NOT NULL DEFAULT 0,
          updated_at      INTEGER NOT NULL,
          updated_by      TEXT NOT NULL
        );
        CREATE TABLE workflow_revisions (
          workflow_id     TEXT NOT NULL,
          revision        INTEGER NOT NULL,
          semantic_hash   TEXT NOT NULL,
          template        BLOB NOT NULL,
          search_text     TEXT NOT NULL,
          draft_revision  INTEGER NOT NULL,
          published_at    INTEGER NOT NULL,
          published_by    TEXT NOT NULL,
          PRIMARY KEY (workflow_id, revision)
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 3,
    description: 'content-addressed artifacts of captured capability payloads',
    destructive: false,
    up(db) {
      db.exec(`
        CREATE TABLE artifacts (
          digest      TEXT PRIMARY KEY,
          size        INTEGER NOT NULL,
          media_type  TEXT NOT NULL,
          bytes       BLOB NOT NULL,
          created_at  INTEGER NOT NULL
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 4,
    description: 'run ownership: leases with a fencing epoch, the outcome projection, the inbox of operator commands, the queue of background runs, workers',
    destructive: false,
    up(db) {
      // Runs of earlier versions have no lease (epoch 0, no owner): the first process that acts
      // on one acquires it. `outcome` is the engine's summary after the last commit (JSON).
      db.exec(`
        ALTER TABLE runs ADD COLUMN lease_owner TEXT;
        ALTER TABLE runs ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE runs ADD COLUMN lease_expires_at INTEGER;
        ALTER TABLE runs ADD COLUMN outcome BLOB;
        ALTER TABLE runs ADD COLUMN wake_at INTEGER;
        ALTER TABLE runs ADD COLUMN concurrency_key TEXT;
        ALTER TABLE runs ADD COLUMN queued_at INTEGER;
        CREATE INDEX runs_by_lease ON runs (lease_expires_at) WHERE lease_owner IS NOT NULL;
        CREATE INDEX runs_by_key ON runs (concurrency_key, status) WHERE concurrency_key IS NOT NULL;
        CREATE TABLE run_queue (
          run_id             TEXT PRIMARY KEY,
          launch             BLOB NOT NULL,
          concurrency_limit  INTEGER NOT NULL DEFAULT 1,
          idempotency_key    TEXT UNIQUE
        ) WITHOUT ROWID;
        CREATE TABLE run_inbox (
          id          INTEGER PRIMARY KEY AUTOINCREMENT,
          run_id      TEXT NOT NULL,
          command     BLOB NOT NULL,
          posted_at   INTEGER NOT NULL,
          state       TEXT NOT NULL DEFAULT 'pending',
          applied_at  INTEGER,
          applied_by  TEXT,
          error       BLOB
        );
        CREATE INDEX run_inbox_pending ON run_inbox (run_id, id) WHERE state = 'pending';
        CREATE TABLE workers (
          owner         TEXT PRIMARY KEY,
          started_at    INTEGER NOT NULL,
          heartbeat_at  INTEGER NOT NULL,
          info          TEXT
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 5,
    description: 'whole run projections: the outcome column holds the engine projection (waiting approvals, calls in flight, attention, wake-up) of the last commit',
    destructive: false,
    up(db) {
      // The outcome of a run that can still change was written before projections listed its
      // approvals and calls: forget it (a projection is derived data; the journal keeps every
      // fact), and the kernel derives the whole projection once from the journal when it is
      // first read. A terminal run's outcome is already whole: it waits for nothing.
      db.exec(`UPDATE runs SET outcome = NULL WHERE status NOT IN ('queued', 'completed', 'failed', 'cancelled');`);
    },
  },
  {
    version: 6,
    description: 'result delivery: the delivery target of a run, and the outbox of deliveries queued when a run ends or waits for an approval',
    destructive: false,
    up(db) {
      // The outbox rows are written by triggers on `runs`, so every path that ends a run or
      // records a waiting approval (an engine commit, a queued run cancelled or refused) queues
      // its delivery in the same transaction. `INSERT OR IGNORE` on the unique
      // (run_id, target_digest, phase) queues each phase once. Times come from the row's
      // `updated_at` (the writing process's clock), not from SQLite's.
      db.exec(`
        ALTER TABLE runs ADD COLUMN delivery_target TEXT;
        ALTER TABLE runs ADD COLUMN delivery_digest TEXT;
        CREATE TABLE deliveries (
          id                TEXT PRIMARY KEY,
          run_id            TEXT NOT NULL,
          target_digest     TEXT NOT NULL,
          phase             TEXT NOT NULL,
          run_status        TEXT NOT NULL,
          payload           TEXT,
          state             TEXT NOT NULL DEFAULT 'pending',
          attempts          INTEGER NOT NULL DEFAULT 0,
          next_attempt_at   INTEGER NOT NULL,
          lease_owner       TEXT,
          lease_expires_at  INTEGER,
          last_error        TEXT,
          last_status_code  INTEGER,
          created_at        INTEGER NOT NULL,
          updated_at        INTEGER NOT NULL,
          delivered_at      INTEGER,
          UNIQUE (run_id, target_digest, phase)
        ) WITHOUT ROWID;
        CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state = 'pending';
        CREATE INDEX deliveries_by_state ON deliveries (state, updated_at);
        ${deliveryTriggers('INSERT', 'NEW.status IN (\'completed\', \'failed\', \'cancelled\')', 'NEW.outcome IS NOT NULL')}
        ${deliveryTriggers('UPDATE OF status, outcome', 'NEW.status IN (\'completed\', \'failed\', \'cancelled\') AND OLD.status IS NOT NEW.status', 'NEW.outcome IS NOT NULL AND OLD.outcome IS NOT NEW.outcome')}
      `);
    },
  },
  {
    version: 7,
    description: 'triggers: revisioned workflow bindings and the ingress journal of every event a trigger received',
    destructive: false,
    up(db) {
      // A binding revision's `spec` (JSON) never changes once written; only `state` moves
      // (draft -> published -> disabled). `ingress_events` holds one row per event a trigger
      // received, whatever became of it. At most one row per (deployment, source, source event
      // id, binding revision) may be `launched` or `missed`: that unique index is the dedupe.
      db.exec(`
        CREATE TABLE workflow_bindings (
          binding_id        TEXT NOT NULL,
          binding_revision  INTEGER NOT NULL,
          source            TEXT NOT NULL,
          state             TEXT NOT NULL,
          spec              BLOB NOT NULL,
          created_at        INTEGER NOT NULL,
          created_by        TEXT NOT NULL,
          published_at      INTEGER,
          disabled_at       INTEGER,
          PRIMARY KEY (binding_id, binding_revision)
        ) WITHOUT ROWID;
        CREATE INDEX workflow_bindings_by_state ON workflow_bindings (state, source);
        CREATE TABLE ingress_events (
          id                INTEGER PRIMARY KEY AUTOINCREMENT,
          deployment        TEXT NOT NULL,
          source            TEXT NOT NULL,
          binding_id        TEXT NOT NULL,
          binding_revision  INTEGER,
          source_event_id   TEXT,
          status            TEXT NOT NULL,
          reason_code       TEXT,
          reason            TEXT,
          run_id            TEXT,
          caller            TEXT,
          occurred_at       INTEGER,
          received_at       INTEGER NOT NULL
        );
        CREATE UNIQUE INDEX ingress_dedupe ON ingress_events (deployment, source, source_event_id, binding_id, binding_revision)
          WHERE status IN ('launched', 'missed');
        CREATE INDEX ingress_by_binding ON ingress_events (binding_id, id);
        CREATE INDEX ingress_by_run ON ingress_events (run_id) WHERE run_id IS NOT NULL;
      `);
    },
  },
  {
    version: 8,
    description: 'fewer pages per commit: the event journal as a rowid table with a unique (run_id, seq) index, runs indexed by status alone',
    destructive: true,
    up(db) {
      // A commit appended its events to a WITHOUT ROWID b-tree keyed by (run_id, seq): an index
      // b-tree, where an insert at the right edge rebalances up to three sibling leaves (SQLite's
      // quick balance is for rowid tables), ~6.8 WAL frames a commit of a 100-step run. As a rowid
      // table the rows are appended at its end and only the small (run_id, seq) entries go into
      // the index. `runs_by_status` held `updated_at`, which every commit moves: its entry was
      // rewritten at every commit. WAL frames per commit (bench/store/wal-frames.mjs): 10.2 -> 7.6
      // for 2-step runs, 9.9 -> 7.5 for 100-step runs. The rows are copied in (run_id, seq) order.
      db.exec(`
        CREATE TABLE events_v8 (
          id      INTEGER PRIMARY KEY,
          run_id  TEXT NOT NULL,
          seq     INTEGER NOT NULL,
          body    BLOB NOT NULL,
          UNIQUE (run_id, seq)
        );
        INSERT INTO events_v8 (run_id, seq, body) SELECT run_id, seq, body FROM events ORDER BY run_id, seq;
        DROP TABLE events;
        ALTER TABLE events_v8 RENAME TO events;
        DROP INDEX runs_by_status;
        CREATE INDEX runs_by_status ON runs (status);
      `);
    },
  },
  {
    version: 9,
    description: "a commit's events in one row: events first_seq..seq, their JSON lines joined by newlines",
    destructive: false,
    up(db) {
      // One row a commit (of up to 64 events) instead of one an event: a 2-step run wrote 19
      // rows, each a record in the table and an entry in its (run_id, seq) index, ~12 of its 23
      // WAL frames. Rows written before keep `first_seq` NULL and hold one event each (`seq`);
      // nothing is rewritten.
      db.exec('ALTER TABLE events ADD COLUMN first_seq INTEGER');
    },
  },
  {
    version: 10,
    description: "a large checkpoint in its own table, written only when one is taken; a small one stays in the run's row",
    destructive: false,
    up(db) {
      // The checkpoint (the run's whole state: ~1 KB for a 2-step run, ~23 KB for a 1,000-item
      // fan-out, ~200 KB for a 10,000-item foreach) sat in the run's row, which every commit
      // updates; SQLite writes a row whose size changed again in full, overflow pages included. A
      // checkpoint larger than 2 KB (`checkpointInlineMax` when this version was written) now lives
      // in `checkpoints`; a small one stays in the row, where it costs no page of its own.
      // `runs.checkpoint_seq` names the latest either way; the store checks that exactly one
      // place holds it. The size is written out: a migration does not change with later code.
      db.exec(`
        CREATE TABLE checkpoints (
          run_id  TEXT PRIMARY KEY,
          seq     INTEGER NOT NULL,
          body    BLOB NOT NULL
        );
        INSERT INTO checkpoints (run_id, seq, body) SELECT run_id, checkpoint_seq, checkpoint FROM runs WHERE length(checkpoint) > 2048;
        UPDATE runs SET checkpoint = NULL WHERE length(checkpoint) > 2048;
      `);
    },
  },
  {
    version: 11,
    description: 'trigger_signatures: a DingTalk (timestamp, sign) is usable once, across workers, until it expires',
    destructive: false,
    up(db) {
      // DingTalk's sign covers the timestamp only, not the body: a captured one could carry any
      // message. The unique key lets one callback claim it; rows are deleted once past the window.
      db.exec(`
        CREATE TABLE trigger_signatures (
          source      TEXT NOT NULL,
          signature   TEXT NOT NULL,
          binding_id  TEXT NOT NULL,
          expires_at  INTEGER NOT NULL,
          PRIMARY KEY (source, signature)
        ) WITHOUT ROWID;
        CREATE INDEX trigger_signatures_expiry ON trigger_signatures (expires_at);
      `);
    },
  },
  {
    version: 12,
    description: 'checksums: a CRC-32 of every journal row, checkpoint and plan, checked when read (docs/durability.md, "Damaged SQLite files")',
    destructive: false,
    up(db) {
      // SQLite's own checks see a damaged page structure, not a changed byte inside a value: the
      // journal's rows carry their own checksum. Rows written before this version have none
      // (NULL): they are read as before, and `agent-workflow doctor` counts them.
      db.exec(`
        ALTER TABLE events ADD COLUMN crc INTEGER;
        ALTER TABLE checkpoints ADD COLUMN crc INTEGER;
        ALTER TABLE runs ADD COLUMN checkpoint_crc INTEGER;
        ALTER TABLE runs ADD COLUMN plan_crc INTEGER;
      `);
    },
  },
  {
    version: 13,
    description: "the console's runs list: runs by creation (its order and cursor), launched runs by their source event id (its search)",
    destructive: false,
    up(db) {
      // The list pages newest first after a (created_at, run_id) cursor: read backwards along this
      // index instead of sorting every run for each page. A run's row is updated at every commit,
      // but these columns never change, so commits do not touch the index.
      db.exec(`
        CREATE INDEX runs_by_created ON runs (created_at, run_id);
        CREATE INDEX ingress_launched_by_event ON ingress_events (source_event_id) WHERE status = 'launched';
      `);
    },
  },
];

/**
 * The two triggers of version 6 for one kind of write to `runs`: `ended` when the run becomes
 * terminal, `approval:<nodeId>` (`approval:<nodeId>[<item>]` when it has an item index) for each approval its
 * projection says it waits for. The delivery id is `<runId>/<phase>/<12 hex of the target digest>`.
 */
function deliveryTriggers(event: string, ended: string, approvals: string): string {
  const name = event.startsWith('INSERT') ? 'insert' : 'update';
  const id = (phase: string) => `NEW.run_id || '/' || ${phase} || '/' || substr(NEW.delivery_digest, 8, 12)`;
  const approvalPhase = `'approval:' || json_extract(a.value, '$.nodeId') || CASE WHEN json_extract(a.value, '$.item') IS NULL THEN '' ELSE '[' || json_extract(a.value, '$.item') || ']' END`;
  return `
    CREATE TRIGGER deliveries_ended_on_${name} AFTER ${event} ON runs
      WHEN NEW.delivery_target IS NOT NULL AND ${ended}
    BEGIN
      INSERT OR IGNORE INTO deliveries (id, run_id, target_digest, phase, run_status, payload, next_attempt_at, created_at, updated_at)
        VALUES (${id("'ended'")}, NEW.run_id, NEW.delivery_digest, 'ended', NEW.status, CAST(NEW.outcome AS TEXT), NEW.updated_at, NEW.updated_at, NEW.updated_at);
    END;
    CREATE TRIGGER deliveries_approval_on_${name} AFTER ${event} ON runs
      WHEN NEW.delivery_target IS NOT NULL AND ${approvals}
    BEGIN
      INSERT OR IGNORE INTO deliveries (id, run_id, target_digest, phase, run_status, payload, next_attempt_at, created_at, updated_at)
        SELECT ${id(approvalPhase)}, NEW.run_id, NEW.delivery_digest, ${approvalPhase}, NEW.status, a.value, NEW.updated_at, NEW.updated_at, NEW.updated_at
          FROM json_each(CAST(NEW.outcome AS TEXT), '$.approvals') AS a;
    END;`;
}

export const schemaVersion = migrations[migrations.length - 1].version;

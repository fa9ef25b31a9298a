// Numbered, transactional migrations of the PostgreSQL store. The table `schema_migrations` of
// the store's schema holds one row per applied version. Versions mirror the SQLite store's
// (`migrations.ts`): version N describes the same tables on both, so a schema version means one
// thing whatever the database. A migration never edits an earlier one: a new version gets a new entry.
//
// Concurrent openers (several workers starting at once) serialise on a session advisory lock
// keyed by the schema name, so each migration runs exactly once, in its own transaction.
import type { Pool, PoolClient } from 'pg';
import { StoreError } from '../../../core/store.js';

export interface PgMigration {
  version: number;
  description: string;
  /** The SQL of the migration; `s` is the quoted schema name to qualify every table with. */
  up(s: string): string;
}

// Conventions: times are `bigint` milliseconds since the epoch (host clock, as in SQLite); ids
// that are ordered use `COLLATE "C"` so that ties break by bytes, as SQLite's BINARY collation
// does; JSON columns are `json` (the text as written: `jsonb` refuses `\u0000` in strings).
export const pgMigrations: readonly PgMigration[] = [
  {
    version: 1,
    description: 'runs, their pinned plans and checkpoints, and the event journal',
    up: (s) => `
      CREATE TABLE ${s}.runs (
        run_id          text COLLATE "C" PRIMARY KEY,
        status          text NOT NULL,
        last_seq        bigint NOT NULL,
        checkpoint_seq  bigint NOT NULL DEFAULT 0,
        checkpoint      bytea,
        plan            bytea NOT NULL,
        created_at      bigint NOT NULL,
        updated_at      bigint NOT NULL
      );
      CREATE INDEX runs_by_status ON ${s}.runs (status, updated_at);
      CREATE TABLE ${s}.events (
        run_id  text COLLATE "C" NOT NULL,
        seq     bigint NOT NULL,
        body    bytea NOT NULL,
        PRIMARY KEY (run_id, seq)
      );`,
  },
  {
    version: 2,
    description: 'workflow catalog: mutable drafts and immutable published revisions',
    up: (s) => `
      CREATE TABLE ${s}.workflow_drafts (
        workflow_id     text COLLATE "C" PRIMARY KEY,
        draft_revision  bigint NOT NULL,
        template        bytea NOT NULL,
        search_text     text NOT NULL,
        last_revision   bigint NOT NULL DEFAULT 0,
        updated_at      bigint NOT NULL,
        updated_by      text NOT NULL
      );
      CREATE TABLE ${s}.workflow_revisions (
        workflow_id     text COLLATE "C" NOT NULL,
        revision        bigint NOT NULL,
        semantic_hash   text NOT NULL,
        template        bytea NOT NULL,
        search_text     text NOT NULL,
        draft_revision  bigint NOT NULL,
        published_at    bigint NOT NULL,
        published_by    text NOT NULL,
        PRIMARY KEY (workflow_id, revision)
      );`,
  },
  {
    version: 3,
    description: 'content-addressed artifacts of captured capability payloads',
    up: (s) => `
      CREATE TABLE ${s}.artifacts (
        digest      text PRIMARY KEY,
        size        bigint NOT NULL,
        media_type  text NOT NULL,
        bytes       bytea NOT NULL,
        created_at  bigint NOT NULL
      );`,
  },
  {
    version: 4,
    description: 'run ownership: leases with a fencing epoch, the outcome projection, the inbox of operator commands, the queue of background runs, workers',
    up: (s) => `
      ALTER TABLE ${s}.runs
        ADD COLUMN lease_owner       text,
        ADD COLUMN lease_epoch       bigint NOT NULL DEFAULT 0,
        ADD COLUMN lease_expires_at  bigint,
        ADD COLUMN outcome           json,
        ADD COLUMN wake_at           bigint,
        ADD COLUMN concurrency_key   text COLLATE "C",
        ADD COLUMN queued_at         bigint;
      CREATE INDEX runs_by_lease ON ${s}.runs (lease_expires_at) WHERE lease_owner IS NOT NULL;
      CREATE INDEX runs_by_key ON ${s}.runs (concurrency_key, status) WHERE concurrency_key IS NOT NULL;
      CREATE INDEX runs_queued ON ${s}.runs (queued_at, run_id) WHERE status = 'queued';
      CREATE TABLE ${s}.run_queue (
        run_id             text COLLATE "C" PRIMARY KEY,
        launch             json NOT NULL,
        concurrency_limit  integer NOT NULL DEFAULT 1,
        idempotency_key    text UNIQUE
      );
      CREATE TABLE ${s}.run_inbox (
        id          bigserial PRIMARY KEY,
        run_id      text COLLATE "C" NOT NULL,
        command     json NOT NULL,
        posted_at   bigint NOT NULL,
        state       text NOT NULL DEFAULT 'pending',
        applied_at  bigint,
        applied_by  text,
        error       json
      );
      CREATE INDEX run_inbox_pending ON ${s}.run_inbox (run_id, id) WHERE state = 'pending';
      CREATE TABLE ${s}.workers (
        owner         text PRIMARY KEY,
        started_at    bigint NOT NULL,
        heartbeat_at  bigint NOT NULL,
        info          text
      );`,
  },
  {
    version: 5,
    description: 'whole run projections: the outcome column holds the engine projection (waiting approvals, calls in flight, attention, wake-up) of the last commit',
    // As in SQLite: the outcome of a run that can still change is derived again, once, from its journal.
    up: (s) => `UPDATE ${s}.runs SET outcome = NULL WHERE status NOT IN ('queued', 'completed', 'failed', 'cancelled');`,
  },
  {
    version: 6,
    description: 'result delivery: the delivery target of a run, and the outbox of deliveries queued when a run ends or waits for an approval',
    // As in SQLite: a trigger on runs queues each delivery in the transaction that ends the run
    // or records the approval it waits for; ON CONFLICT on (run_id, target_digest, phase) queues
    // each phase once.
    up: (s) => `
      ALTER TABLE ${s}.runs
        ADD COLUMN delivery_target  json,
        ADD COLUMN delivery_digest  text;
      CREATE TABLE ${s}.deliveries (
        id                text COLLATE "C" PRIMARY KEY,
        run_id            text COLLATE "C" NOT NULL,
        target_digest     text NOT NULL,
        phase             text COLLATE "C" NOT NULL,
        run_status        text NOT NULL,
        payload           json,
        state             text NOT NULL DEFAULT 'pending',
        attempts          integer NOT NULL DEFAULT 0,
        next_attempt_at   bigint NOT NULL,
        lease_owner       text,
        lease_expires_at  bigint,
        last_error        text,
        last_status_code  integer,
        created_at        bigint NOT NULL,
        updated_at        bigint NOT NULL,
        delivered_at      bigint,
        UNIQUE (run_id, target_digest, phase)
      );
      CREATE INDEX deliveries_due ON ${s}.deliveries (next_attempt_at) WHERE state = 'pending';
      CREATE INDEX deliveries_by_state ON ${s}.deliveries (state, updated_at);
      CREATE FUNCTION ${s}.queue_deliveries() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        old_status text := CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END;
        old_outcome text := CASE WHEN TG_OP = 'UPDATE' THEN OLD.outcome::text END;
        suffix text := '/' || substr(NEW.delivery_digest, 8, 12);
      BEGIN
        IF NEW.delivery_target IS NULL THEN RETURN NULL; END IF;
        IF NEW.status IN ('completed', 'failed', 'cancelled') AND old_status IS DISTINCT FROM NEW.status THEN
          INSERT INTO ${s}.deliveries (id, run_id, target_digest, phase, run_status, payload, next_attempt_at, created_at, updated_at)
            VALUES (NEW.run_id || '/ended' || suffix, NEW.run_id, NEW.delivery_digest, 'ended', NEW.status, NEW.outcome, NEW.updated_at, NEW.updated_at, NEW.updated_at)
            ON CONFLICT DO NOTHING;
        END IF;
        IF NEW.outcome IS NOT NULL AND old_outcome IS DISTINCT FROM NEW.outcome::text AND json_typeof(NEW.outcome -> 'approvals') = 'array' THEN
          INSERT INTO ${s}.deliveries (id, run_id, target_digest, phase, run_status, payload, next_attempt_at, created_at, updated_at)
            SELECT NEW.run_id || '/' || p.phase || suffix, NEW.run_id, NEW.delivery_digest, p.phase, NEW.status, p.value, NEW.updated_at, NEW.updated_at, NEW.updated_at
              FROM (SELECT a.value, 'approval:' || (a.value ->> 'nodeId') || COALESCE('[' || (a.value ->> 'item') || ']', '') AS phase
                      FROM json_array_elements(NEW.outcome -> 'approvals') AS a(value)) AS p
            ON CONFLICT DO NOTHING;
        END IF;
        RETURN NULL;
      END
      $fn$;
      -- Runs without a target (most) do not even call the function.
      CREATE TRIGGER deliveries_queue AFTER INSERT OR UPDATE OF status, outcome ON ${s}.runs
        FOR EACH ROW WHEN (NEW.delivery_target IS NOT NULL) EXECUTE FUNCTION ${s}.queue_deliveries();`,
  },
  {
    version: 7,
    description: 'triggers: revisioned workflow bindings and the ingress journal of every event a trigger received',
    up: (s) => `
      CREATE TABLE ${s}.workflow_bindings (
        binding_id        text COLLATE "C" NOT NULL,
        binding_revision  bigint NOT NULL,
        source            text NOT NULL,
        state             text NOT NULL,
        spec              json NOT NULL,
        created_at        bigint NOT NULL,
        created_by        text NOT NULL,
        published_at      bigint,
        disabled_at       bigint,
        PRIMARY KEY (binding_id, binding_revision)
      );
      CREATE INDEX workflow_bindings_by_state ON ${s}.workflow_bindings (state, source);
      CREATE TABLE ${s}.ingress_events (
        id                bigserial PRIMARY KEY,
        deployment        text COLLATE "C" NOT NULL,
        source            text NOT NULL,
        binding_id        text COLLATE "C" NOT NULL,
        binding_revision  bigint,
        source_event_id   text COLLATE "C",
        status            text NOT NULL,
        reason_code       text,
        reason            text,
        run_id            text COLLATE "C",
        caller            text,
        occurred_at       bigint,
        received_at       bigint NOT NULL
      );
      CREATE UNIQUE INDEX ingress_dedupe ON ${s}.ingress_events (deployment, source, source_event_id, binding_id, binding_revision)
        WHERE status IN ('launched', 'missed');
      CREATE INDEX ingress_by_binding ON ${s}.ingress_events (binding_id, id);
      CREATE INDEX ingress_by_run ON ${s}.ingress_events (run_id) WHERE run_id IS NOT NULL;`,
  },
  {
    version: 8,
    description: 'runs indexed by status alone: a commit that keeps the status changes no indexed column',
    // `updated_at` moves at every commit: with it in `runs_by_status` no commit's UPDATE could be
    // a heap-only tuple update, and each wrote an entry into every index of `runs`.
    up: (s) => `
      DROP INDEX ${s}.runs_by_status;
      CREATE INDEX runs_by_status ON ${s}.runs (status);`,
  },
  {
    version: 9,
    description: 'the events table gets first_seq, as in SQLite (which keeps a commit\'s events in one row); PostgreSQL keeps one row an event and leaves it NULL',
    // A version means the same tables on both stores. PostgreSQL writes its events with one
    // INSERT … SELECT FROM unnest per commit already; its rows stay one an event.
    up: (s) => `ALTER TABLE ${s}.events ADD COLUMN first_seq bigint;`,
  },
  {
    version: 10,
    description: "a large checkpoint in its own table, written only when one is taken; a small one stays in the run's row, as in SQLite",
    // PostgreSQL keeps a large value out of line (TOAST) and an UPDATE of the run's other columns
    // keeps it; SQLite wrote it again with the row. A version means the same tables on both. The
    // size (2 KB) is written out: a migration does not change with later code.
    up: (s) => `
      CREATE TABLE ${s}.checkpoints (
        run_id  text COLLATE "C" PRIMARY KEY,
        seq     bigint NOT NULL,
        body    bytea NOT NULL
      );
      INSERT INTO ${s}.checkpoints (run_id, seq, body) SELECT run_id, checkpoint_seq, checkpoint FROM ${s}.runs WHERE length(checkpoint) > 2048;
      UPDATE ${s}.runs SET checkpoint = NULL WHERE length(checkpoint) > 2048;`,
  },
  {
    version: 11,
    description: 'trigger_signatures: a DingTalk (timestamp, sign) is usable once, across workers, until it expires',
    up: (s) => `
      CREATE TABLE ${s}.trigger_signatures (
        source      text COLLATE "C" NOT NULL,
        signature   text COLLATE "C" NOT NULL,
        binding_id  text COLLATE "C" NOT NULL,
        expires_at  bigint NOT NULL,
        PRIMARY KEY (source, signature)
      );
      CREATE INDEX trigger_signatures_expiry ON ${s}.trigger_signatures (expires_at);`,
  },
  {
    version: 12,
    // The SQLite store's v12 adds checksums to its values. PostgreSQL checks its own pages (data
    // checksums, `initdb --data-checksums`) and its replication does; nothing changes here, and the
    // version is kept so both stores count their schema alike.
    description: 'checksums of journal rows, checkpoints and plans (SQLite); none needed here',
    up: () => 'SELECT 1',
  },
  {
    version: 13,
    description: "the console's runs list: runs by creation (its order and cursor), launched runs by their source event id (its search)",
    up: (s) => `
      CREATE INDEX runs_by_created ON ${s}.runs (created_at, run_id);
      CREATE INDEX ingress_launched_by_event ON ${s}.ingress_events (source_event_id) WHERE status = 'launched';`,
  },
];

export const pgSchemaVersion = pgMigrations[pgMigrations.length - 1].version;

/** Schema names the store accepts (they are interpolated into SQL, quoted). */
const schemaNamePattern = /^[a-z_][a-z0-9_]{0,62}$/;

export function quoteSchema(schema: string): string {
  if (!schemaNamePattern.test(schema)) throw new StoreError('store.bad-id', `${JSON.stringify(schema)} is not a schema name ([a-z_][a-z0-9_]{0,62})`);
  return `"${schema}"`;
}

/** Creates the schema when missing and applies pending migrations, one transaction each. */
export async function migratePg(pool: Pool, schema: string): Promise<number> {
  const s = quoteSchema(schema);
  const client: PoolClient = await pool.connect();
  try {
    // A session lock (not a transaction one): it spans the migrations' separate transactions.
    await client.query("SELECT pg_advisory_lock(hashtext('agent-workflow.migrate'), hashtext($1))", [schema]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      const { rows } = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${s}.schema_migrations`);
      const current = rows[0]?.v ?? 0;
      if (current > pgSchemaVersion) {
        throw new StoreError('store.schema-too-new', `the PostgreSQL schema ${schema} has schema version ${current}, newer than this program understands (${pgSchemaVersion}); upgrade the program instead of downgrading the store`);
      }
      for (const m of pgMigrations) {
        if (m.version <= current) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.up(s));
          await client.query(`INSERT INTO ${s}.schema_migrations (version, description) VALUES ($1, $2)`, [m.version, m.description]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {});
          throw err;
        }
      }
      return Math.max(current, pgSchemaVersion);
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtext('agent-workflow.migrate'), hashtext($1))", [schema]).catch(() => {});
    }
  } catch (err) {
    if (err instanceof StoreError) throw err;
    throw new StoreError('store.io', `migrating the PostgreSQL schema ${schema}: ${(err as Error).message}`);
  } finally {
    client.release();
  }
}

// `TriggerStorage` on PostgreSQL: bindings and the ingress journal (schema v7) in the journal's
// schema, with the semantics of the SQLite storage (`stores/sqlite/triggers.ts`):
//
// - `admit` is one transaction: the `launched` row is inserted first with
//   `ON CONFLICT … WHERE status IN ('launched','missed') DO NOTHING` on the dedupe index, so of two
//   transactions admitting one event the second waits for the first and then inserts nothing; it
//   reads the first's row (READ COMMITTED: a new snapshot per statement) and records a
//   `deduplicated` row instead. The winner enqueues the run (`PgOwnership.enqueueIn`) in the same
//   transaction: the record and the queued run commit together or not at all.
// - a new binding revision is `latest + 1` under a transaction-scoped advisory lock on the id.
import type { Pool } from 'pg';
import type { QueuedLaunch } from '../../../core/ownership-store.js';
import type { PgOwnership } from './ownership.js';
import { rows, statement, transaction } from './pool.js';
import { ingressColumns, ingressRecordOf, ingressValues, type BindingRow, type DedupeKey, type IngressEntry, type IngressFilter, type IngressRecord, type IngressRow, type TriggerStorage } from '../trigger-storage.js';

const placeholders = ingressColumns.split(',').map((_, i) => `$${i + 1}`).join(', ');
const bindingColumns = 'binding_id, binding_revision, source, state, spec, created_at, created_by, published_at, disabled_at';
const dedupeTarget = `(deployment, source, source_event_id, binding_id, binding_revision) WHERE status IN ('launched', 'missed')`;

export class PgTriggerStorage implements TriggerStorage {
  constructor(
    private readonly pool: Pool,
    private readonly s: string,
    private readonly ownership: PgOwnership,
  ) {}

  async putBinding(b: { id: string; source: string; spec: string; at: number; by: string; expectedRevision?: number }): Promise<{ row: BindingRow } | { conflict: number }> {
    const s = this.s;
    return transaction(this.pool, 'triggers: put binding', async (c) => {
      await c.query("SELECT pg_advisory_xact_lock(hashtext('agent-workflow.binding'), hashtext($1))", [b.id]);
      const [latest] = await rows<{ r: number | null }>(c, { text: `SELECT max(binding_revision) AS r FROM ${s}.workflow_bindings WHERE binding_id = $1`, values: [b.id] });
      const current = latest?.r ?? 0;
      if (b.expectedRevision !== undefined && b.expectedRevision !== current) return { conflict: current };
      const [row] = await rows<BindingRow>(c, {
        text: `INSERT INTO ${s}.workflow_bindings (binding_id, binding_revision, source, state, spec, created_at, created_by) VALUES ($1, $2, $3, 'draft', $4::json, $5, $6) RETURNING ${bindingColumns}`,
        values: [b.id, current + 1, b.source, b.spec, b.at, b.by],
      });
      return { row };
    });
  }

  async getBinding(id: string, revision: number): Promise<BindingRow | undefined> {
    const [row] = await statement<BindingRow>(this.pool, 'triggers: get binding', { text: `SELECT ${bindingColumns} FROM ${this.s}.workflow_bindings WHERE binding_id = $1 AND binding_revision = $2`, values: [id, revision] });
    return row;
  }

  async latestBinding(id: string): Promise<BindingRow | undefined> {
    const [row] = await statement<BindingRow>(this.pool, 'triggers: latest binding', { text: `SELECT ${bindingColumns} FROM ${this.s}.workflow_bindings WHERE binding_id = $1 ORDER BY binding_revision DESC LIMIT 1`, values: [id] });
    return row;
  }

  async activeBinding(id: string): Promise<BindingRow | undefined> {
    const [row] = await statement<BindingRow>(this.pool, 'triggers: active binding', {
      name: `${this.s}.activeBinding`,
      text: `SELECT ${bindingColumns} FROM ${this.s}.workflow_bindings WHERE binding_id = $1 AND state = 'published' ORDER BY binding_revision DESC LIMIT 1`,
      values: [id],
    });
    return row;
  }

  async listBindings(filter: { source?: string; state?: string; id?: string }): Promise<BindingRow[]> {
    return statement<BindingRow>(this.pool, 'triggers: list bindings', {
      text: `SELECT ${bindingColumns} FROM ${this.s}.workflow_bindings
              WHERE ($1::text IS NULL OR source = $1) AND ($2::text IS NULL OR state = $2) AND ($3::text IS NULL OR binding_id = $3)
              ORDER BY binding_id, binding_revision`,
      values: [filter.source ?? null, filter.state ?? null, filter.id ?? null],
    });
  }

  async setBindingState(id: string, revision: number, to: 'published' | 'disabled', at: number): Promise<boolean> {
    const text =
      to === 'published'
        ? `UPDATE ${this.s}.workflow_bindings SET state = 'published', published_at = $1 WHERE binding_id = $2 AND binding_revision = $3 AND state = 'draft' RETURNING binding_id`
        : `UPDATE ${this.s}.workflow_bindings SET state = 'disabled', disabled_at = $1 WHERE binding_id = $2 AND binding_revision = $3 AND state IN ('draft', 'published') RETURNING binding_id`;
    return (await statement(this.pool, 'triggers: binding state', { text, values: [at, id, revision] })).length > 0;
  }

  async findAdmitted(k: DedupeKey): Promise<IngressRecord | undefined> {
    const [row] = await statement<IngressRow>(this.pool, 'triggers: find admitted', {
      name: `${this.s}.ingressAdmitted`,
      text: `SELECT * FROM ${this.s}.ingress_events WHERE deployment = $1 AND source = $2 AND source_event_id = $3 AND binding_id = $4 AND binding_revision = $5 AND status IN ('launched', 'missed')`,
      values: [k.deployment, k.source, k.sourceEventId, k.bindingId, k.bindingRevision],
    });
    return row ? ingressRecordOf(row) : undefined;
  }

  async record(entry: IngressEntry): Promise<IngressRecord> {
    const [row] = await statement<{ id: number }>(this.pool, 'triggers: record', { name: `${this.s}.ingressInsert`, text: `INSERT INTO ${this.s}.ingress_events (${ingressColumns}) VALUES (${placeholders}) RETURNING id`, values: ingressValues(entry) });
    return { ...entry, id: row.id };
  }

  async claimSignature(claim: { source: string; signature: string; bindingId: string; expiresAt: number }, now: number): Promise<boolean> {
    await statement(this.pool, 'triggers: expire signatures', { name: `${this.s}.signaturesExpire`, text: `DELETE FROM ${this.s}.trigger_signatures WHERE expires_at < $1`, values: [now] });
    const inserted = await statement(this.pool, 'triggers: claim signature', {
      name: `${this.s}.signatureClaim`,
      text: `INSERT INTO ${this.s}.trigger_signatures (source, signature, binding_id, expires_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1`,
      values: [claim.source, claim.signature, claim.bindingId, claim.expiresAt],
    });
    return inserted.length > 0;
  }

  async recordUnverified(entry: IngressEntry, keepMax: number): Promise<IngressRecord> {
    const record = await this.record(entry);
    // Concurrent prunes may each delete the same old rows; the bound holds once each has run.
    await statement(this.pool, 'triggers: prune unverified', {
      name: `${this.s}.ingressPruneUnverified`,
      text: `DELETE FROM ${this.s}.ingress_events WHERE id IN (SELECT id FROM ${this.s}.ingress_events WHERE status = 'rejected' AND caller IS NULL AND source IN ('webhook', 'dingtalk') ORDER BY id DESC OFFSET $1)`,
      values: [keepMax],
    });
    return record;
  }

  async recordMissed(entry: IngressEntry & { sourceEventId: string; bindingRevision: number }): Promise<{ created: boolean }> {
    const inserted = await statement(this.pool, 'triggers: record missed', {
      name: `${this.s}.ingressMissed`,
      text: `INSERT INTO ${this.s}.ingress_events (${ingressColumns}) VALUES (${placeholders}) ON CONFLICT ${dedupeTarget} DO NOTHING RETURNING id`,
      values: ingressValues({ ...entry, status: 'missed' }),
    });
    return { created: inserted.length > 0 };
  }

  async admit(
    entry: IngressEntry & { sourceEventId: string; bindingRevision: number; runId: string },
    launch: QueuedLaunch,
    now: number,
    options: { recordDuplicate?: boolean } = {},
  ): Promise<{ record: IngressRecord | undefined; runId: string | undefined; deduplicated: boolean }> {
    const s = this.s;
    return transaction(this.pool, 'triggers: admit', async (c) => {
      const launched = { ...entry, status: 'launched' as const };
      const [row] = await rows<{ id: number }>(c, {
        name: `${s}.ingressAdmit`,
        text: `INSERT INTO ${s}.ingress_events (${ingressColumns}) VALUES (${placeholders}) ON CONFLICT ${dedupeTarget} DO NOTHING RETURNING id`,
        values: ingressValues(launched),
      });
      if (!row) {
        const [first] = await rows<IngressRow>(c, {
          name: `${s}.ingressAdmittedIn`,
          text: `SELECT * FROM ${s}.ingress_events WHERE deployment = $1 AND source = $2 AND source_event_id = $3 AND binding_id = $4 AND binding_revision = $5 AND status IN ('launched', 'missed')`,
          values: [entry.deployment, entry.source, entry.sourceEventId, entry.bindingId, entry.bindingRevision],
        });
        const runId = first?.run_id ?? undefined;
        if (options.recordDuplicate === false) return { record: undefined, runId, deduplicated: true };
        const dup: IngressEntry = { ...entry, status: 'deduplicated', runId };
        const [d] = await rows<{ id: number }>(c, { name: `${s}.ingressInsertIn`, text: `INSERT INTO ${s}.ingress_events (${ingressColumns}) VALUES (${placeholders}) RETURNING id`, values: ingressValues(dup) });
        return { record: { ...dup, id: d.id }, runId, deduplicated: true };
      }
      await this.ownership.enqueueIn(c, launch, now);
      return { record: { ...launched, id: row.id }, runId: entry.runId, deduplicated: false };
    });
  }

  async listIngress(filter: IngressFilter): Promise<IngressRecord[]> {
    const found = await statement<IngressRow>(this.pool, 'triggers: list ingress', {
      text: `SELECT * FROM ${this.s}.ingress_events
              WHERE id > $1 AND ($2::text IS NULL OR binding_id = $2) AND ($3::text IS NULL OR status = $3) AND ($4::text IS NULL OR run_id = $4)
              ORDER BY id LIMIT $5`,
      values: [filter.afterId ?? 0, filter.bindingId ?? null, filter.status ?? null, filter.runId ?? null, filter.limit],
    });
    return found.map(ingressRecordOf);
  }

  async recentSlots(deployment: string, bindingId: string, bindingRevision: number, limit: number): Promise<IngressRecord[]> {
    const found = await statement<IngressRow>(this.pool, 'triggers: recent slots', {
      name: `${this.s}.ingressRecentSlots`,
      text: `SELECT * FROM ${this.s}.ingress_events WHERE deployment = $1 AND source = 'cron' AND binding_id = $2 AND binding_revision = $3 AND status IN ('launched', 'missed', 'rejected')
              ORDER BY occurred_at DESC, id DESC LIMIT $4`,
      values: [deployment, bindingId, bindingRevision, limit],
    });
    return found.map(ingressRecordOf);
  }
}

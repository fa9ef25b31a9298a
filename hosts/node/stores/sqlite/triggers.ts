// `TriggerStorage` on SQLite: bindings and the ingress journal (schema v7) in the journal's
// database. `admit` runs in one `BEGIN IMMEDIATE` transaction with the queued run's insert (the
// ownership's `enqueue` nests in it as a savepoint), which SQLite serialises across processes:
// of two processes admitting one event, the second sees the first's `launched` row.
import type { Database, Statement } from 'better-sqlite3';
import type { QueuedLaunch } from '../../../core/ownership-store.js';
import { StoreError } from '../../../core/store.js';
import type { SqliteOwnership } from './ownership.js';
import { ingressColumns, ingressRecordOf, ingressValues, type BindingRow, type DedupeKey, type IngressEntry, type IngressFilter, type IngressRecord, type IngressRow, type TriggerStorage } from '../trigger-storage.js';

/** The records `recordUnverified` keeps to a bound. */
const unverified = "status = 'rejected' AND caller IS NULL AND source IN ('webhook', 'dingtalk')";
const placeholders = ingressColumns.split(',').map(() => '?').join(', ');

export class SqliteTriggerStorage implements TriggerStorage {
  private readonly stmt: Record<string, Statement>;

  constructor(
    private readonly db: Database,
    private readonly ownership: SqliteOwnership,
  ) {
    this.stmt = {
      getBinding: db.prepare('SELECT * FROM workflow_bindings WHERE binding_id = ? AND binding_revision = ?'),
      latestBinding: db.prepare('SELECT * FROM workflow_bindings WHERE binding_id = ? ORDER BY binding_revision DESC LIMIT 1'),
      activeBinding: db.prepare("SELECT * FROM workflow_bindings WHERE binding_id = ? AND state = 'published' ORDER BY binding_revision DESC LIMIT 1"),
      insertBinding: db.prepare("INSERT INTO workflow_bindings (binding_id, binding_revision, source, state, spec, created_at, created_by) VALUES (?, ?, ?, 'draft', ?, ?, ?)"),
      publish: db.prepare("UPDATE workflow_bindings SET state = 'published', published_at = ? WHERE binding_id = ? AND binding_revision = ? AND state = 'draft'"),
      disable: db.prepare("UPDATE workflow_bindings SET state = 'disabled', disabled_at = ? WHERE binding_id = ? AND binding_revision = ? AND state IN ('draft', 'published')"),
      admitted: db.prepare("SELECT * FROM ingress_events WHERE deployment = ? AND source = ? AND source_event_id = ? AND binding_id = ? AND binding_revision = ? AND status IN ('launched', 'missed')"),
      insert: db.prepare(`INSERT INTO ingress_events (${ingressColumns}) VALUES (${placeholders})`),
      insertOrIgnore: db.prepare(`INSERT OR IGNORE INTO ingress_events (${ingressColumns}) VALUES (${placeholders})`),
      byId: db.prepare('SELECT * FROM ingress_events WHERE id = ?'),
      pruneUnverified: db.prepare(`DELETE FROM ingress_events WHERE id IN (SELECT id FROM ingress_events WHERE ${unverified} ORDER BY id DESC LIMIT -1 OFFSET ?)`),
      recentSlots: db.prepare("SELECT * FROM ingress_events WHERE deployment = ? AND source = 'cron' AND binding_id = ? AND binding_revision = ? AND status IN ('launched', 'missed', 'rejected') ORDER BY occurred_at DESC, id DESC LIMIT ?"),
    };
  }

  private tx<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn).immediate();
    } catch (err) {
      if (err instanceof StoreError) throw err;
      throw new StoreError('store.io', `triggers: ${(err as Error).message}`);
    }
  }

  putBinding(b: { id: string; source: string; spec: string; at: number; by: string; expectedRevision?: number }): { row: BindingRow } | { conflict: number } {
    return this.tx(() => {
      const latest = (this.stmt.latestBinding.get(b.id) as BindingRow | undefined)?.binding_revision ?? 0;
      if (b.expectedRevision !== undefined && b.expectedRevision !== latest) return { conflict: latest };
      this.stmt.insertBinding.run(b.id, latest + 1, b.source, Buffer.from(b.spec, 'utf8'), b.at, b.by);
      return { row: this.stmt.getBinding.get(b.id, latest + 1) as BindingRow };
    });
  }

  getBinding(id: string, revision: number): BindingRow | undefined {
    return this.stmt.getBinding.get(id, revision) as BindingRow | undefined;
  }

  latestBinding(id: string): BindingRow | undefined {
    return this.stmt.latestBinding.get(id) as BindingRow | undefined;
  }

  activeBinding(id: string): BindingRow | undefined {
    return this.stmt.activeBinding.get(id) as BindingRow | undefined;
  }

  listBindings(filter: { source?: string; state?: string; id?: string }): BindingRow[] {
    const where: string[] = [];
    const values: unknown[] = [];
    if (filter.source !== undefined) (where.push('source = ?'), values.push(filter.source));
    if (filter.state !== undefined) (where.push('state = ?'), values.push(filter.state));
    if (filter.id !== undefined) (where.push('binding_id = ?'), values.push(filter.id));
    return this.db.prepare(`SELECT * FROM workflow_bindings ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY binding_id, binding_revision`).all(...values) as BindingRow[];
  }

  setBindingState(id: string, revision: number, to: 'published' | 'disabled', at: number): boolean {
    return (to === 'published' ? this.stmt.publish : this.stmt.disable).run(at, id, revision).changes > 0;
  }

  findAdmitted(k: DedupeKey): IngressRecord | undefined {
    const row = this.stmt.admitted.get(k.deployment, k.source, k.sourceEventId, k.bindingId, k.bindingRevision) as IngressRow | undefined;
    return row ? ingressRecordOf(row) : undefined;
  }

  record(entry: IngressEntry): IngressRecord {
    const id = Number(this.stmt.insert.run(...ingressValues(entry)).lastInsertRowid);
    return { ...entry, id };
  }

  claimSignature(claim: { source: string; signature: string; bindingId: string; expiresAt: number }, now: number): boolean {
    return this.db.transaction(() => {
      this.db.prepare('DELETE FROM trigger_signatures WHERE expires_at < ?').run(now);
      return this.db.prepare('INSERT OR IGNORE INTO trigger_signatures (source, signature, binding_id, expires_at) VALUES (?, ?, ?, ?)').run(claim.source, claim.signature, claim.bindingId, claim.expiresAt).changes > 0;
    })();
  }

  recordUnverified(entry: IngressEntry, keepMax: number): IngressRecord {
    return this.db.transaction(() => {
      const record = this.record(entry);
      this.stmt.pruneUnverified.run(keepMax);
      return record;
    })();
  }

  recordMissed(entry: IngressEntry & { sourceEventId: string; bindingRevision: number }): { created: boolean } {
    return { created: this.stmt.insertOrIgnore.run(...ingressValues({ ...entry, status: 'missed' })).changes > 0 };
  }

  admit(
    entry: IngressEntry & { sourceEventId: string; bindingRevision: number; runId: string },
    launch: QueuedLaunch,
    now: number,
    options: { recordDuplicate?: boolean } = {},
  ): { record: IngressRecord | undefined; runId: string | undefined; deduplicated: boolean } {
    return this.tx(() => {
      const first = this.findAdmitted(entry);
      if (first) {
        const record = options.recordDuplicate === false ? undefined : this.record({ ...entry, status: 'deduplicated', runId: first.runId });
        return { record, runId: first.runId, deduplicated: true };
      }
      this.ownership.enqueue(launch, now);
      const record = this.record({ ...entry, status: 'launched' });
      return { record, runId: entry.runId, deduplicated: false };
    });
  }

  listIngress(filter: IngressFilter): IngressRecord[] {
    const where: string[] = ['id > ?'];
    const values: unknown[] = [filter.afterId ?? 0];
    if (filter.bindingId !== undefined) (where.push('binding_id = ?'), values.push(filter.bindingId));
    if (filter.status !== undefined) (where.push('status = ?'), values.push(filter.status));
    if (filter.runId !== undefined) (where.push('run_id = ?'), values.push(filter.runId));
    const rows = this.db.prepare(`SELECT * FROM ingress_events WHERE ${where.join(' AND ')} ORDER BY id LIMIT ?`).all(...values, filter.limit) as IngressRow[];
    return rows.map(ingressRecordOf);
  }

  recentSlots(deployment: string, bindingId: string, bindingRevision: number, limit: number): IngressRecord[] {
    return (this.stmt.recentSlots.all(deployment, bindingId, bindingRevision, limit) as IngressRow[]).map(ingressRecordOf);
  }
}

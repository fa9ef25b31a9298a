// The delivery outbox on SQLite (see hosts/core/delivery-outbox.ts). Rows are queued by the
// triggers of migration 6 in the transaction that ends a run or records an approval it waits
// for; here they are claimed (in one `BEGIN IMMEDIATE` transaction, which SQLite serialises
// across processes, so two senders never hold one delivery at once), settled and listed.
import type { Database, Statement } from 'better-sqlite3';
import type { ClaimedDelivery, DeliveryOutbox, DeliveryRecord, DeliverySettlement, DeliveryState, DeliveryTarget } from '../../../core/delivery-outbox.js';

export interface DeliveryRow {
  id: string;
  run_id: string;
  phase: string;
  run_status: string;
  state: string;
  attempts: number | string;
  next_attempt_at: number | string;
  last_error: string | null;
  last_status_code: number | null;
  created_at: number | string;
  updated_at: number | string;
  delivered_at: number | string | null;
  lease_owner: string | null;
  lease_expires_at: number | string | null;
}

export const deliveryColumns = 'id, run_id, phase, run_status, state, attempts, next_attempt_at, last_error, last_status_code, created_at, updated_at, delivered_at, lease_owner, lease_expires_at';

export function deliveryRecordOf(row: DeliveryRow, now?: number): DeliveryRecord {
  const r: DeliveryRecord = {
    id: row.id,
    runId: row.run_id,
    phase: row.phase,
    runStatus: row.run_status,
    state: row.state as DeliveryState,
    attempts: Number(row.attempts),
    nextAttemptAt: Number(row.next_attempt_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
  if (row.last_error !== null) r.lastError = row.last_error;
  if (row.last_status_code !== null) r.lastStatusCode = row.last_status_code;
  if (row.delivered_at !== null) r.deliveredAt = Number(row.delivered_at);
  if (row.lease_owner !== null && row.lease_expires_at !== null && (now === undefined || Number(row.lease_expires_at) >= now)) r.lease = { owner: row.lease_owner, expiresAt: Number(row.lease_expires_at) };
  return r;
}

/** How an attempt's end changes a row: the values of the settle statement. */
export function settlementValues(s: DeliverySettlement, now: number): { state: DeliveryState; nextAttemptAt: number | null; error: string | null; statusCode: number | null; deliveredAt: number | null } {
  if (s.ok) return { state: 'delivered', nextAttemptAt: null, error: null, statusCode: s.statusCode, deliveredAt: now };
  return { state: s.retryAt === undefined ? 'dead' : 'pending', nextAttemptAt: s.retryAt ?? null, error: s.error.slice(0, 2000), statusCode: s.statusCode ?? null, deliveredAt: null };
}

export class SqliteDeliveries implements DeliveryOutbox {
  private readonly stmt: Record<string, Statement>;

  constructor(private readonly db: Database) {
    this.stmt = {
      due: db.prepare(
        `SELECT d.${deliveryColumns.split(', ').join(', d.')}, d.payload, r.delivery_target FROM deliveries d JOIN runs r USING (run_id)
          WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND (d.lease_owner IS NULL OR d.lease_expires_at < ?)
          ORDER BY d.next_attempt_at, d.id LIMIT ?`,
      ),
      take: db.prepare("UPDATE deliveries SET lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1, updated_at = ? WHERE id = ? AND state = 'pending' AND attempts = ?"),
      settle: db.prepare(
        `UPDATE deliveries SET state = ?, next_attempt_at = COALESCE(?, next_attempt_at), last_error = COALESCE(?, last_error), last_status_code = COALESCE(?, last_status_code),
                delivered_at = ?, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
          WHERE id = ? AND lease_owner = ? AND attempts = ? AND state = 'pending'`,
      ),
      get: db.prepare(`SELECT ${deliveryColumns} FROM deliveries WHERE id = ?`),
      // A pending delivery that a sender holds is left to it (resetting it would let a second sender send it at once).
      retry: db.prepare(
        `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
          WHERE id = ? AND (state = 'dead' OR (state = 'pending' AND (lease_owner IS NULL OR lease_expires_at < ?)))`,
      ),
      target: db.prepare('SELECT delivery_target FROM runs WHERE run_id = ?').pluck(),
    };
  }

  claim(owner: string, limit: number, ttlMs: number, now: number): ClaimedDelivery[] {
    if (limit <= 0) return [];
    return this.db
      .transaction(() => {
        const rows = this.stmt.due.all(now, now, limit) as (DeliveryRow & { payload: string | null; delivery_target: string })[];
        const out: ClaimedDelivery[] = [];
        for (const row of rows) {
          if (this.stmt.take.run(owner, now + ttlMs, now, row.id, row.attempts).changes === 0) continue;
          const record = deliveryRecordOf({ ...row, attempts: Number(row.attempts) + 1, lease_owner: owner, lease_expires_at: now + ttlMs, updated_at: now });
          out.push({ ...record, target: JSON.parse(row.delivery_target) as DeliveryTarget, payload: row.payload === null ? null : JSON.parse(row.payload) });
        }
        return out;
      })
      .immediate();
  }

  settle(id: string, owner: string, attempt: number, settlement: DeliverySettlement, now: number): boolean {
    const v = settlementValues(settlement, now);
    return this.stmt.settle.run(v.state, v.nextAttemptAt, v.error, v.statusCode, v.deliveredAt, now, id, owner, attempt).changes > 0;
  }

  list(filter: { state?: DeliveryState; runId?: string; limit?: number } = {}): DeliveryRecord[] {
    const where: string[] = [];
    const values: unknown[] = [];
    if (filter.state !== undefined) {
      where.push('state = ?');
      values.push(filter.state);
    }
    if (filter.runId !== undefined) {
      where.push('run_id = ?');
      values.push(filter.runId);
    }
    const sql = `SELECT ${deliveryColumns} FROM deliveries ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id LIMIT ?`;
    return (this.db.prepare(sql).all(...values, filter.limit ?? 100) as DeliveryRow[]).map((r) => deliveryRecordOf(r, Date.now()));
  }

  get(id: string): DeliveryRecord | undefined {
    const row = this.stmt.get.get(id) as DeliveryRow | undefined;
    return row ? deliveryRecordOf(row, Date.now()) : undefined;
  }

  retry(id: string, now: number): boolean {
    return this.stmt.retry.run(now, now, id, now).changes > 0;
  }

  targetOf(runId: string): DeliveryTarget | undefined {
    const text = this.stmt.target.get(runId) as string | null | undefined;
    return text ? (JSON.parse(text) as DeliveryTarget) : undefined;
  }
}

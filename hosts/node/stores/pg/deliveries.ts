// The delivery outbox on PostgreSQL (see hosts/core/delivery-outbox.ts), the same contract as
// `stores/sqlite/deliveries.ts`. Rows are queued by the trigger of migration 6; senders on any machine
// claim them with `FOR UPDATE SKIP LOCKED`, so two never hold one delivery at once.
import type { Pool } from 'pg';
import type { ClaimedDelivery, DeliveryOutbox, DeliveryRecord, DeliverySettlement, DeliveryState, DeliveryTarget } from '../../../core/delivery-outbox.js';
import { statement } from './pool.js';
import { deliveryColumns, deliveryRecordOf, settlementValues, type DeliveryRow } from '../sqlite/deliveries.js';

export class PgDeliveries implements DeliveryOutbox {
  constructor(
    private readonly pool: Pool,
    /** The quoted schema name. */
    private readonly s: string,
  ) {}

  async claim(owner: string, limit: number, ttlMs: number, now: number): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    const s = this.s;
    const taken = await statement<DeliveryRow & { payload: unknown; delivery_target: DeliveryTarget }>(this.pool, 'claiming deliveries', {
      name: `${s}.claimDeliveries`,
      text: `WITH due AS (
               SELECT id FROM ${s}.deliveries
                WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_owner IS NULL OR lease_expires_at < $1)
                ORDER BY next_attempt_at, id LIMIT $2 FOR UPDATE SKIP LOCKED
             ), t AS (
               UPDATE ${s}.deliveries d SET lease_owner = $3, lease_expires_at = $4, attempts = d.attempts + 1, updated_at = $1
                 FROM due WHERE d.id = due.id RETURNING d.*
             )
             SELECT t.${deliveryColumns.split(', ').join(', t.')}, t.payload, r.delivery_target FROM t JOIN ${s}.runs r USING (run_id) ORDER BY t.next_attempt_at, t.id`,
      values: [now, limit, owner, now + ttlMs],
    });
    return taken.map((row) => ({ ...deliveryRecordOf(row), target: row.delivery_target, payload: row.payload ?? null }));
  }

  async settle(id: string, owner: string, attempt: number, settlement: DeliverySettlement, now: number): Promise<boolean> {
    const v = settlementValues(settlement, now);
    const changed = await statement(this.pool, 'settling a delivery', {
      name: `${this.s}.settleDelivery`,
      text: `UPDATE ${this.s}.deliveries SET state = $1, next_attempt_at = COALESCE($2, next_attempt_at), last_error = COALESCE($3, last_error), last_status_code = COALESCE($4, last_status_code),
                    delivered_at = $5, lease_owner = NULL, lease_expires_at = NULL, updated_at = $6
              WHERE id = $7 AND lease_owner = $8 AND attempts = $9 AND state = 'pending' RETURNING id`,
      values: [v.state, v.nextAttemptAt, v.error, v.statusCode, v.deliveredAt, now, id, owner, attempt],
    });
    return changed.length > 0;
  }

  async list(filter: { state?: DeliveryState; runId?: string; limit?: number } = {}): Promise<DeliveryRecord[]> {
    const found = await statement<DeliveryRow>(this.pool, 'listing deliveries', {
      text: `SELECT ${deliveryColumns} FROM ${this.s}.deliveries
              WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR run_id = $2)
              ORDER BY created_at DESC, id LIMIT $3`,
      values: [filter.state ?? null, filter.runId ?? null, filter.limit ?? 100],
    });
    const now = Date.now();
    return found.map((r) => deliveryRecordOf(r, now));
  }

  async get(id: string): Promise<DeliveryRecord | undefined> {
    const [row] = await statement<DeliveryRow>(this.pool, 'reading a delivery', { text: `SELECT ${deliveryColumns} FROM ${this.s}.deliveries WHERE id = $1`, values: [id] });
    return row ? deliveryRecordOf(row, Date.now()) : undefined;
  }

  async retry(id: string, now: number): Promise<boolean> {
    const changed = await statement(this.pool, 'retrying a delivery', {
      text: `UPDATE ${this.s}.deliveries SET state = 'pending', attempts = 0, next_attempt_at = $1, lease_owner = NULL, lease_expires_at = NULL, updated_at = $1
              WHERE id = $2 AND (state = 'dead' OR (state = 'pending' AND (lease_owner IS NULL OR lease_expires_at < $1))) RETURNING id`,
      values: [now, id],
    });
    return changed.length > 0;
  }

  async targetOf(runId: string): Promise<DeliveryTarget | undefined> {
    const [row] = await statement<{ delivery_target: DeliveryTarget | null }>(this.pool, 'reading a delivery target', { text: `SELECT delivery_target FROM ${this.s}.runs WHERE run_id = $1`, values: [runId] });
    return row?.delivery_target ?? undefined;
  }
}

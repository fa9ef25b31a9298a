// The rules of lease acquisition, shared by the SQLite and PostgreSQL stores: given the run's row
// as read inside the acquiring transaction, what the store must do. Stores only run the SQL.
import type { CommandResult, LeaseGrant } from '../../core/ownership-store.js';
import { terminalRunStatuses, terminalStatuses } from '../../core/types.js';
import { ownerIsDead } from './owner-id.js';

/** SQL list of the terminal statuses, for `status IN (...)`. */
export const terminalStatusListSql = terminalRunStatuses.map((s) => `'${s}'`).join(', ');

/** The end of `postedAfterEnd`'s message (PostgreSQL builds the message in SQL from the run's row). */
export const postedAfterEndSuffix = '; it had ended when the command was posted';

/**
 * The error of a command posted to a run that had already ended: it is stored refused at once,
 * since no commit of the run can apply it any more.
 */
export function postedAfterEnd(runId: string, status: string): { code: 'run.terminal'; message: string } {
  return { code: 'run.terminal', message: `run ${runId} is ${status}${postedAfterEndSuffix}` };
}

/** SQL condition: the run is neither queued nor terminal (it has, or may get, an owner). */
export const activeStatusSql = `status NOT IN ('queued', ${terminalStatusListSql})`;

export interface LeaseRow {
  status: string;
  lease_owner: string | null;
  lease_epoch: number;
  lease_expires_at: number | null;
}

/** A lease that nobody may take: held, not expired, and its process not provably gone. */
function leaseIsLive(owner: string | null, expiresAt: number | null, now: number): boolean {
  return owner !== null && expiresAt !== null && expiresAt >= now && !ownerIsDead(owner);
}

/**
 * `renew`: the owner already holds it (same epoch, new expiry); `take`: free, expired or its owner
 * is gone (epoch + 1); `refuse`: the answer to give.
 */
export function leaseDecision(runId: string, row: LeaseRow | undefined, owner: string, now: number): { action: 'renew' | 'take'; grant: LeaseGrant } | { action: 'refuse'; grant: LeaseGrant } {
  if (!row) return { action: 'refuse', grant: { ok: false, code: 'run.not-found', message: `run ${runId} does not exist in this store` } };
  if (terminalStatuses.has(row.status)) return { action: 'refuse', grant: { ok: false, code: 'run.terminal', message: `run ${runId} is ${row.status}` } };
  if (row.lease_owner === owner) return { action: 'renew', grant: { ok: true, epoch: row.lease_epoch, previousEpoch: row.lease_epoch, previousOwner: owner } };
  if (leaseIsLive(row.lease_owner, row.lease_expires_at, now)) {
    return {
      action: 'refuse',
      grant: {
        ok: false,
        code: 'lease.held',
        holder: { owner: row.lease_owner!, epoch: row.lease_epoch, expiresAt: row.lease_expires_at! },
        message: `run ${runId} is owned by ${row.lease_owner} (lease epoch ${row.lease_epoch}, expires in ${row.lease_expires_at! - now} ms)`,
      },
    };
  }
  return { action: 'take', grant: { ok: true, epoch: row.lease_epoch + 1, previousEpoch: row.lease_epoch, ...(row.lease_owner ? { previousOwner: row.lease_owner } : {}) } };
}

/**
 * Fencing: only the holder of the run's current lease commits; an entry without a lease (a
 * single-process host) commits only while nobody holds a live lease. Answers why an entry is
 * refused, or undefined when it may commit.
 */
export function fencingRefusal(
  entry: { runId: string; lease?: { owner: string; epoch: number } },
  head: { owner: string | null; epoch: number; expiresAt: number | null },
  now: number,
): string | undefined {
  const lease = entry.lease;
  const fenced = lease ? head.epoch !== lease.epoch || head.owner !== lease.owner : leaseIsLive(head.owner, head.expiresAt, now);
  if (!fenced) return undefined;
  return `run ${entry.runId}: the commit was staged under ${lease ? `lease epoch ${lease.epoch} of ${lease.owner}` : 'no lease'}, but the run's lease is epoch ${head.epoch}${head.owner ? ` held by ${head.owner}` : ' (free)'}`;
}

/** A row of the inbox as both stores select it (`error` already parsed from its JSON). */
export interface InboxResultRow {
  id: number;
  run_id: string;
  state: CommandResult['state'];
  applied_at: number | null;
  applied_by: string | null;
  error: CommandResult['error'] | null;
}

/** What became of an operator command, from its inbox row. */
export function commandResultOf(row: InboxResultRow): CommandResult {
  return {
    id: row.id,
    runId: row.run_id,
    state: row.state,
    ...(row.applied_at !== null ? { appliedAt: row.applied_at } : {}),
    ...(row.applied_by !== null ? { appliedBy: row.applied_by } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
  };
}

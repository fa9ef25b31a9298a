// What triggers need from the store: the bindings' table and the ingress journal (schema v7), on
// SQLite (`stores/sqlite/triggers.ts`) or PostgreSQL (`stores/pg/triggers.ts`). Rows use the column names of
// the schema-v7 tables on both.
//
// The ingress journal has one row per event a trigger received:
//
//   status         written when                                          run_id
//   received       an accepted event that starts no run (a DingTalk       the run it was about, if any
//                  `status` or `approve` command)
//   rejected       verification, identification, mapping or validation   -
//                  refused it (`reason_code`, `reason`)
//   deduplicated   its dedupe key was already launched (or missed)        the first event's run
//   launched       it created a queued run, in the same transaction       the run
//   missed         a cron slot that passed while no worker served, and    -
//                  the misfire policy did not run it
//
// Dedupe key: (deployment, source, source event id, binding id, binding revision); at most one row
// of a key is `launched` or `missed` (a unique index).
import type { QueuedLaunch } from '../../core/ownership-store.js';
import type { MaybePromise } from '../catalog/catalog.js';

export type IngressStatus = 'received' | 'rejected' | 'deduplicated' | 'launched' | 'missed';

export interface BindingRow {
  binding_id: string;
  binding_revision: number;
  source: string;
  state: string;
  spec: Buffer | string | object;
  created_at: number;
  created_by: string;
  published_at: number | null;
  disabled_at: number | null;
}

export interface IngressRow {
  id: number;
  deployment: string;
  source: string;
  binding_id: string;
  binding_revision: number | null;
  source_event_id: string | null;
  status: string;
  reason_code: string | null;
  reason: string | null;
  run_id: string | null;
  caller: string | null;
  occurred_at: number | null;
  received_at: number;
}

/** An ingress record as written (no id yet). */
export interface IngressEntry {
  deployment: string;
  source: string;
  bindingId: string;
  bindingRevision?: number;
  sourceEventId?: string;
  status: IngressStatus;
  reasonCode?: string;
  reason?: string;
  runId?: string;
  /** Who sent it, as the adapter identified the caller. */
  caller?: string;
  /** When the event says it happened (a signed timestamp, a cron slot), ms. */
  occurredAt?: number;
  receivedAt: number;
}

export interface IngressRecord extends IngressEntry {
  id: number;
}

export interface DedupeKey {
  deployment: string;
  source: string;
  sourceEventId: string;
  bindingId: string;
  bindingRevision: number;
}

export interface IngressFilter {
  bindingId?: string;
  status?: IngressStatus;
  runId?: string;
  /** Records with an id above this one (paging), ascending. */
  afterId?: number;
  limit: number;
}

export function ingressRecordOf(row: IngressRow): IngressRecord {
  return {
    id: row.id,
    deployment: row.deployment,
    source: row.source,
    bindingId: row.binding_id,
    ...(row.binding_revision !== null ? { bindingRevision: row.binding_revision } : {}),
    ...(row.source_event_id !== null ? { sourceEventId: row.source_event_id } : {}),
    status: row.status as IngressStatus,
    ...(row.reason_code !== null ? { reasonCode: row.reason_code } : {}),
    ...(row.reason !== null ? { reason: row.reason } : {}),
    ...(row.run_id !== null ? { runId: row.run_id } : {}),
    ...(row.caller !== null ? { caller: row.caller } : {}),
    ...(row.occurred_at !== null ? { occurredAt: row.occurred_at } : {}),
    receivedAt: row.received_at,
  };
}

/** The columns of an entry, in the order of `ingressColumns`. */
export const ingressColumns = 'deployment, source, binding_id, binding_revision, source_event_id, status, reason_code, reason, run_id, caller, occurred_at, received_at';

export function ingressValues(e: IngressEntry): unknown[] {
  return [e.deployment, e.source, e.bindingId, e.bindingRevision ?? null, e.sourceEventId ?? null, e.status, e.reasonCode ?? null, e.reason ?? null, e.runId ?? null, e.caller ?? null, e.occurredAt ?? null, e.receivedAt];
}

export interface TriggerStorage {
  /** A new draft revision (latest + 1). With `expectedRevision`, `{ conflict }` unless the latest revision is that one. Atomic. */
  putBinding(b: { id: string; source: string; spec: string; at: number; by: string; expectedRevision?: number }): MaybePromise<{ row: BindingRow } | { conflict: number }>;
  getBinding(id: string, revision: number): MaybePromise<BindingRow | undefined>;
  latestBinding(id: string): MaybePromise<BindingRow | undefined>;
  /** The highest `published` revision of `id`. */
  activeBinding(id: string): MaybePromise<BindingRow | undefined>;
  listBindings(filter: { source?: string; state?: string; id?: string }): MaybePromise<BindingRow[]>;
  /** Moves a revision to `published` (from `draft`) or `disabled` (from `draft` or `published`); false when it was not in such a state. */
  setBindingState(id: string, revision: number, to: 'published' | 'disabled', at: number, by: string): MaybePromise<boolean>;

  /** The `launched` or `missed` record of a dedupe key. */
  findAdmitted(key: DedupeKey): MaybePromise<IngressRecord | undefined>;
  /** Writes a record that starts nothing (`received`, `rejected`). */
  record(entry: IngressEntry): MaybePromise<IngressRecord>;
  /**
   * Writes the `rejected` record of a request no caller was verified for (unknown binding,
   * unsigned, bad signature, 405, bad encoding…) and drops the oldest such webhook and DingTalk
   * records beyond the newest `keepMax`: anyone can send these, so they must not grow the store
   * without bound.
   */
  recordUnverified(entry: IngressEntry, keepMax: number): MaybePromise<IngressRecord>;
  /**
   * Claims a verified signature (a DingTalk `<timestamp>:<sign>`) for one use: true the first
   * time, false when any process claimed it before. Claims past `expiresAt` are deleted as
   * `now` passes them (the timestamp window refuses those signatures anyway).
   */
  claimSignature(claim: { source: string; signature: string; bindingId: string; expiresAt: number }, now: number): MaybePromise<boolean>;
  /**
   * A cron slot that is not run: a `missed` record, unless the slot is already recorded as
   * `launched` or `missed` (then nothing is written and `created` is false).
   */
  recordMissed(entry: IngressEntry & { sourceEventId: string; bindingRevision: number }): MaybePromise<{ created: boolean }>;
  /**
   * In ONE transaction: when the entry's dedupe key is already `launched` (or `missed`), writes a
   * `deduplicated` record naming the first run (unless `recordDuplicate` is false); otherwise
   * commits `launch` as a queued run and the `launched` record of it.
   */
  admit(
    entry: IngressEntry & { sourceEventId: string; bindingRevision: number; runId: string },
    launch: QueuedLaunch,
    now: number,
    options?: { recordDuplicate?: boolean },
  ): MaybePromise<{ record: IngressRecord | undefined; /** Undefined when the first record of the key is a missed cron slot. */ runId: string | undefined; deduplicated: boolean }>;
  listIngress(filter: IngressFilter): MaybePromise<IngressRecord[]>;
  /** The latest `limit` slots recorded `launched`, `missed` or `rejected` for a cron binding revision, newest first (one statement). */
  recentSlots(deployment: string, bindingId: string, bindingRevision: number, limit: number): MaybePromise<IngressRecord[]>;
}

/**
 * Result delivery: the outbox a store keeps of what must be sent where, and how it is claimed.
 *
 * - A run may carry one delivery target (where its results go). The store keeps it with the run.
 * - When a run with a target ends (`completed`, `failed`, `cancelled`) or its projection lists an
 *   approval it waits for, the store queues a delivery **in the transaction that records it**
 *   (phase `ended`, or `approval:<nodeId>`; `approval:<nodeId>[<item>]` when the approval has an item index). The
 *   pair (run, target digest, phase) is unique: each phase is queued once.
 * - Senders claim due deliveries with a lease (owner, expiry); a claim counts one attempt. The
 *   claimant settles the delivery (`delivered`, or failed with a next attempt time, or `dead`)
 *   only while it still holds that claim (`owner` and `attempts` match), so a sender whose lease
 *   expired cannot overwrite what the next one did. A sender that dies mid-send leaves the
 *   delivery to be claimed again after the lease expires: delivery is at least once, and the
 *   stable delivery id lets a receiver drop a repeat.
 *
 * Times are the caller's clock (ms since the epoch), passed in, as for `RunOwnership`.
 */
import type { Awaitable } from './store.js';

export type DeliveryTarget =
  | { kind: 'webhook'; url: string; secretRef?: string }
  /** `accessTokenRef` names the environment variable holding the robot's access_token (never in the URL). */
  | { kind: 'dingtalk'; webhookUrl: string; secretRef?: string; accessTokenRef?: string; format?: 'text' | 'markdown' };

export type DeliveryState = 'pending' | 'delivered' | 'dead';

/** A delivery as the outbox keeps it. */
export interface DeliveryRecord {
  /** Stable: `<runId>/<phase>/<12 hex of the target digest>`; sent as `x-adw-delivery-id`. */
  id: string;
  runId: string;
  phase: string;
  /** The run's status when the delivery was queued. */
  runStatus: string;
  state: DeliveryState;
  /** Attempts since the delivery was queued or last retried by an operator. */
  attempts: number;
  nextAttemptAt: number;
  /** The error of the last failed attempt (kept once the delivery succeeds, as a record). */
  lastError?: string;
  lastStatusCode?: number;
  createdAt: number;
  updatedAt: number;
  deliveredAt?: number;
  /** Who holds the delivery now (a sender's owner id) and until when. */
  lease?: { owner: string; expiresAt: number };
}

/** A delivery a sender claimed: what it sends and to whom. */
export interface ClaimedDelivery extends DeliveryRecord {
  target: DeliveryTarget;
  /** `ended`: the run's projection (status, result or error); `approval:…`: the waiting approval. */
  payload: unknown;
}

/** How one attempt ended. `retryAt` absent on a failure: the delivery is dead-lettered. */
export type DeliverySettlement =
  | { ok: true; statusCode: number }
  | { ok: false; error: string; statusCode?: number; retryAt?: number };

export interface DeliveryOutbox {
  /** Up to `limit` pending deliveries due at `now` whose lease is free or expired, leased to `owner` until `now + ttlMs`; each claim counts one attempt. */
  claim(owner: string, limit: number, ttlMs: number, now: number): Awaitable<ClaimedDelivery[]>;
  /** Records the attempt's end; answers false when `owner` no longer holds the claim of attempt `attempt`. */
  settle(id: string, owner: string, attempt: number, settlement: DeliverySettlement, now: number): Awaitable<boolean>;
  /** Deliveries, newest first, optionally only of one state or run. */
  list(filter?: { state?: DeliveryState; runId?: string; limit?: number }): Awaitable<DeliveryRecord[]>;
  get(id: string): Awaitable<DeliveryRecord | undefined>;
  /** An operator's retry: a dead delivery (or a pending one no sender holds) becomes pending, due now, with its attempts reset. False otherwise. */
  retry(id: string, now: number): Awaitable<boolean>;
  /** The delivery target stored with a run, if any. */
  targetOf(runId: string): Awaitable<DeliveryTarget | undefined>;
}

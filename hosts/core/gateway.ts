// The host side of the `gateway` import: something that carries out a capability request after
// the commit that recorded it is durable, and reports the outcome.
import type { CapabilityOutcome, GatewayRequest } from './types.js';

export interface GatewayContext {
  /** Aborted when the engine cancels the invocation (timeout, run cancelled or failed). */
  signal: AbortSignal;
  /** Stable across retries of the same attempt and across host restarts: use it as an idempotency key. */
  invocationId: string;
  /** True when the request is sent again after a host restart (only for idempotent or read-only work). */
  reissued: boolean;
  /**
   * For a gateway that answered `capability.cancelled` when the signal fired but whose work goes
   * on: the promise of what that work really ends with, recorded as evidence (`capability.late`).
   */
  late?: (outcome: Promise<CapabilityOutcome>) => void;
  /**
   * Live-only progress of the call (a token stream, a percentage): handed to the run's live
   * subscribers in this process as it happens, never journaled, dropped when nobody watches or a
   * subscriber's buffer is full. Present when the host has a live stream.
   */
  progress?: (data: unknown) => void;
  /**
   * W3C trace context of this call (`00-<trace id>-<call span id>-<flags>`): the run's trace, with
   * the call's own span as the parent of whatever the tool or agent traces. Present when the host
   * knows the run's trace (the Node host always does; see hosts/core/trace-context.ts).
   */
  traceparent?: string;
  /**
   * For a call that needs this process to own its run: asked right before the tool or agent is
   * invoked, after whatever the gateway awaited first (credentials, the run's trace). `false`:
   * the run is no longer this process's (its lease expired, maybe taken over), so the call must
   * not start; the gateway resolves with `undefined`. A promise while the lease is renewed.
   */
  mayStart?: () => boolean | Promise<boolean>;
}

export interface Gateway {
  /**
   * Carries out one request. Resolves with the outcome, or with `undefined` when the outcome
   * will arrive later through another path (a human approval given with `approve`).
   * Must not throw; a thrown error is turned into a failed outcome by the caller anyway.
   */
  execute(request: GatewayRequest, context: GatewayContext): Promise<CapabilityOutcome | undefined>;
  /** How the host classifies `<kind>:<name>` capabilities: `read-only`, `idempotent` or `unknown`. */
  effects(): Record<string, string>;
}

/** Turns anything thrown by embedding code into a failed outcome with a stable code. */
export function outcomeOfThrown(err: unknown, fallbackCode: string): CapabilityOutcome {
  const e = err as { code?: unknown; message?: unknown; retryable?: unknown };
  const code = typeof e?.code === 'string' && /^[a-z][a-z0-9.-]*$/i.test(e.code) ? e.code : fallbackCode;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return { ok: false, error: { code, message: message.slice(0, 2000), ...(typeof e?.retryable === 'boolean' ? { retryable: e.retryable } : {}) } };
}

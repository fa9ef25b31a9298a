// Launch and runtime options that are checked, not silently dropped: an option this host does not
// carry out is refused with a typed error, and `origin` / `delivery` are recorded with the run.

import { isAuthority } from '../../../engine/protocol/authority.js';
import { jsonInputLimits, jsonValueProblem } from '../../core/json-input.js';
import { assertTraceparent } from '../../core/trace-context.js';
import { WorkflowError as OptionError } from './errors.js';
import { deliveryTargetOf, type DeliveryTarget } from '../delivery/target.js';

export { assertCaptureOptions } from '../../core/capture-options.js';

const launchKeys = new Set(['input', 'runId', 'authority', 'timeoutMs', 'correlation', 'executionMode', 'idempotencyKey', 'concurrencyKey', 'concurrencyLimit', 'actor', 'origin', 'delivery', 'traceparent']);

/** The longest a run may be given (`timeoutMs`): the bound of `spec.policies.timeoutMs`, 31 days. */
const runTimeoutMsMax = 31 * 86_400_000;

/**
 * Refuses launch options this host does not know (`launch.option-unsupported`) and options of the
 * wrong type or out of range, each with its own code, before anything is written or run: an
 * option is never dropped or read as something else (`executionMode: 'backgroud'` ran inline,
 * `timeoutMs: "60000"` was journaled as a deadline of text, an object as `idempotencyKey` or
 * `concurrencyKey` failed with a bare `TypeError` or an SQL error).
 */
export function assertLaunchOptions(options: object): void {
  const unknown = Object.keys(options).filter((k) => !launchKeys.has(k) && (options as Record<string, unknown>)[k] !== undefined);
  if (unknown.length > 0) throw new OptionError('launch.option-unsupported', `launch option ${unknown.join(', ')} is not supported by this host`, { unsupported: unknown });
  const o = options as Record<string, unknown>;
  const refuse = (code: string, message: string): never => {
    throw new OptionError(code, message, { option: code.slice('launch.bad-'.length) });
  };
  const shown = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : typeof v);
  if (o.runId !== undefined && typeof o.runId !== 'string') refuse('launch.bad-run-id', `runId must be a string, not ${shown(o.runId)}`);
  if (o.authority !== undefined && !isAuthority(o.authority)) refuse('launch.bad-authority', 'authority must be { id: string, scopes: string[] }');
  if (o.timeoutMs !== undefined && !(Number.isInteger(o.timeoutMs) && (o.timeoutMs as number) >= 1 && (o.timeoutMs as number) <= runTimeoutMsMax)) {
    refuse('launch.bad-timeout', `timeoutMs must be an integer of 1 to ${runTimeoutMsMax} ms, not ${typeof o.timeoutMs === 'number' ? o.timeoutMs : shown(o.timeoutMs)}`);
  }
  if (o.executionMode !== undefined && o.executionMode !== 'inline' && o.executionMode !== 'background') refuse('launch.bad-execution-mode', `executionMode must be "inline" or "background", not ${shown(o.executionMode)}`);
  for (const key of ['idempotencyKey', 'concurrencyKey'] as const) {
    if (o[key] !== undefined && (typeof o[key] !== 'string' || o[key] === '')) refuse(key === 'idempotencyKey' ? 'launch.bad-idempotency-key' : 'launch.bad-concurrency', `${key} must be a non-empty string, not ${shown(o[key])}`);
  }
  if (o.concurrencyLimit !== undefined && !(Number.isInteger(o.concurrencyLimit) && (o.concurrencyLimit as number) >= 1)) refuse('launch.bad-concurrency', `concurrencyLimit must be an integer of 1 or more, not ${typeof o.concurrencyLimit === 'number' ? o.concurrencyLimit : shown(o.concurrencyLimit)}`);
  if (o.actor !== undefined && (typeof o.actor !== 'string' || !/^[a-z][a-z0-9-]{0,31}$/.test(o.actor))) refuse('launch.bad-actor', `actor must be a short lowercase name such as "sdk" or "cli", not ${shown(o.actor)}`);
  for (const key of ['correlation', 'origin'] as const) {
    if (o[key] === undefined) continue;
    const found = jsonValueProblem(o[key], jsonInputLimits.runInputDepthMax);
    if (found) refuse('launch.bad-correlation', `${key} is recorded in the journal and must be plain JSON: ${found.problem} at ${found.pointer || '/'}`);
  }
}

/**
 * The correlation a run is launched with: the caller's correlation, plus `origin` (where the
 * launch came from: a channel, a message, a user), `delivery` (where its results are sent,
 * checked by `deliveryTargetOf`; it names the secret's environment variable, never the secret)
 * and `traceparent` (the W3C trace context of the launch, see hosts/core/trace-context.ts) when
 * given. Correlation is recorded in `run.accepted` and carried by every event of the run.
 * The delivery target is also kept with the run by the store, whose outbox queues a delivery
 * when the run ends or waits for an approval (see docs/triggers.md, "Result delivery").
 */
export function launchCorrelation(options: { correlation?: unknown; origin?: unknown; delivery?: unknown; traceparent?: unknown }): unknown {
  if (options.origin === undefined && options.delivery === undefined && options.traceparent === undefined) return options.correlation;
  const c = options.correlation;
  if (c !== undefined && (c === null || typeof c !== 'object' || Array.isArray(c))) {
    throw new OptionError('launch.bad-correlation', 'origin, delivery and traceparent are recorded in the correlation, which must then be an object');
  }
  let traceparent: string | undefined;
  if (options.traceparent !== undefined) {
    try {
      traceparent = assertTraceparent(options.traceparent);
    } catch (err) {
      throw new OptionError('launch.bad-traceparent', (err as Error).message);
    }
  }
  const delivery: DeliveryTarget | undefined = options.delivery !== undefined ? deliveryTargetOf(options.delivery) : undefined;
  return {
    ...(c as Record<string, unknown> | undefined),
    ...(options.origin !== undefined ? { origin: options.origin } : {}),
    ...(delivery !== undefined ? { delivery } : {}),
    ...(traceparent !== undefined ? { traceparent } : {}),
  };
}

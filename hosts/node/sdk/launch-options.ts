// Launch and runtime options that are checked, not silently dropped: an option this host does not
// carry out is refused with a typed error, and `origin` / `delivery` are recorded with the run.

import { assertTraceparent } from '../../core/trace-context.js';
import { WorkflowError as OptionError } from './errors.js';
import { deliveryTargetOf, type DeliveryTarget } from '../delivery/target.js';

export { assertCaptureOptions } from '../../core/capture-options.js';

const launchKeys = new Set(['input', 'runId', 'authority', 'timeoutMs', 'correlation', 'executionMode', 'idempotencyKey', 'concurrencyKey', 'concurrencyLimit', 'actor', 'origin', 'delivery', 'traceparent']);

/** Refuses launch options this host does not know (`launch.option-unsupported`). */
export function assertLaunchOptions(options: object): void {
  const unknown = Object.keys(options).filter((k) => !launchKeys.has(k) && (options as Record<string, unknown>)[k] !== undefined);
  if (unknown.length > 0) throw new OptionError('launch.option-unsupported', `launch option ${unknown.join(', ')} is not supported by this host`, { unsupported: unknown });
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

// Launch and runtime options that are checked, not silently dropped: an option this host does not
// carry out is refused with a typed error, and `origin` / `deliveryRef` are recorded with the run.

import { WorkflowError as OptionError } from './errors.js';

export { assertCaptureOptions } from '../core/capture-options.js';

const launchKeys = new Set(['input', 'runId', 'authority', 'timeoutMs', 'correlation', 'executionMode', 'idempotencyKey', 'concurrencyKey', 'concurrencyLimit', 'actor', 'origin', 'deliveryRef']);

/** Whether `launch` carries out the option `name` (a trigger passes `delivery` only once it does). */
export function launchOptionSupported(name: string): boolean {
  return launchKeys.has(name);
}

/** Refuses launch options this host does not know (`launch.option-unsupported`). */
export function assertLaunchOptions(options: object): void {
  const unknown = Object.keys(options).filter((k) => !launchKeys.has(k) && (options as Record<string, unknown>)[k] !== undefined);
  if (unknown.length > 0) throw new OptionError('launch.option-unsupported', `launch option ${unknown.join(', ')} is not supported by this host`, { unsupported: unknown });
}

/**
 * The correlation a run is launched with: the caller's correlation, plus `origin` (where the
 * launch came from: a channel, a message, a user) and `deliveryRef` (where its result should be
 * delivered) when given. Correlation is recorded in `run.accepted` and carried by every event of
 * the run, so both are stored with the run and can be read back from any of its events. The
 * host does not deliver results itself: a consumer reads `deliveryRef` from the run.
 */
export function launchCorrelation(options: { correlation?: unknown; origin?: unknown; deliveryRef?: unknown }): unknown {
  if (options.origin === undefined && options.deliveryRef === undefined) return options.correlation;
  const c = options.correlation;
  if (c !== undefined && (c === null || typeof c !== 'object' || Array.isArray(c))) {
    throw new OptionError('launch.bad-correlation', 'origin and deliveryRef are recorded in the correlation, which must then be an object');
  }
  if (options.deliveryRef !== undefined && (typeof options.deliveryRef !== 'string' || options.deliveryRef.length === 0 || options.deliveryRef.length > 2048)) {
    throw new OptionError('launch.bad-delivery-ref', 'deliveryRef must be a non-empty string of at most 2048 characters');
  }
  return {
    ...(c as Record<string, unknown> | undefined),
    ...(options.origin !== undefined ? { origin: options.origin } : {}),
    ...(options.deliveryRef !== undefined ? { deliveryRef: options.deliveryRef } : {}),
  };
}

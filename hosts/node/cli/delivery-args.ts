// The delivery options of the command line: `--deliver-to` of a launch, and the `--delivery-*`
// options every command that opens a runtime takes (`serve` sends).
import type { DeliveryOptions, DeliveryTarget } from '../runtime.js';
import { deliveryTargetFromFlag } from '../delivery/target.js';
import { integerOption, optionString, UsageError, type ParsedArgs } from './args.js';
import { cliLimits } from '../limits.js';

/** `--<name> <positive integer>` within its documented range (cliLimits), or undefined when absent. */
export function wholeNumber(args: ParsedArgs, name: string): number | undefined {
  const max = name === 'limit' ? cliLimits.deliveriesListMax : name === 'delivery-attempts' ? cliLimits.deliveryAttemptsMax : cliLimits.durationMsMax;
  return integerOption(args, name, { min: 1, max });
}

/** `--delivery-attempts`, `--delivery-backoff-ms`, `--delivery-timeout-ms`, `--delivery-lease-ms`, over the host module's `delivery`. */
export function deliveryOptionsFromArgs(args: ParsedArgs, host: { delivery?: DeliveryOptions }): DeliveryOptions | undefined {
  const fromArgs: DeliveryOptions = {};
  const set = (name: string, key: keyof Omit<DeliveryOptions, 'env' | 'allowTargets'>) => {
    const n = wholeNumber(args, name);
    if (n !== undefined) fromArgs[key] = n;
  };
  set('delivery-attempts', 'maxAttempts');
  set('delivery-backoff-ms', 'backoffBaseMs');
  set('delivery-timeout-ms', 'sendTimeoutMs');
  set('delivery-lease-ms', 'leaseTtlMs');
  const allow = optionString(args, 'delivery-allow-targets');
  if (allow !== undefined) fromArgs.allowTargets = [...(host.delivery?.allowTargets ?? []), ...allow.split(',').map((s) => s.trim()).filter(Boolean)];
  if (Object.keys(fromArgs).length === 0) return host.delivery;
  return { ...host.delivery, ...fromArgs };
}

/**
 * `--deliver-to <webhook:url | dingtalk:url | url>` with `--deliver-secret-env NAME` (and, for a
 * DingTalk robot, `--deliver-token-env NAME`), as a launch's `delivery`.
 */
export function deliveryTargetFromArgs(args: ParsedArgs): DeliveryTarget | undefined {
  const spec = optionString(args, 'deliver-to');
  const secretRef = optionString(args, 'deliver-secret-env');
  const accessTokenRef = optionString(args, 'deliver-token-env');
  if (spec === undefined) {
    if (secretRef !== undefined) throw new UsageError('--deliver-secret-env names the secret of --deliver-to, which is missing');
    if (accessTokenRef !== undefined) throw new UsageError('--deliver-token-env names the access token of --deliver-to, which is missing');
    return undefined;
  }
  return deliveryTargetFromFlag(spec, secretRef, accessTokenRef);
}

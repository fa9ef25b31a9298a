// The sender of the delivery outbox: claims due deliveries with a lease, sends each one
// (delivery/send.ts) and settles it: delivered, failed with its next attempt after an
// exponential backoff with jitter, or dead once its attempts run out (or the receiver refused
// the request itself). An operator retries a dead delivery (`deliveries retry <id>`).
//
// Several senders (processes, machines) may share one store: the claim gives each delivery to
// one of them at a time, and a settle only lands while its claim holds. A sender that dies
// mid-send leaves the delivery to the next claim after its lease expires: delivery is at least
// once, with a stable delivery id for the receiver to drop a repeat.
import { PollLoop } from '../../core/poll-loop.js';
import type { ClaimedDelivery, DeliveryOutbox, DeliverySettlement } from '../../core/delivery-outbox.js';
import type { HostLog } from '../../core/types.js';
import type { SendResult } from './send.js';
import { WorkflowError } from '../sdk/errors.js';
import { deliveryLimits } from '../limits.js';

export interface DeliveryOptions {
  /** Attempts before a delivery is dead-lettered (default 8). */
  maxAttempts?: number;
  /** Delay before the first retry (default 1 s); it doubles per attempt, plus up to 50 % jitter. */
  backoffBaseMs?: number;
  /** The longest delay between two attempts (default 15 min). */
  backoffMaxMs?: number;
  /** One send's time limit (default 10 s). */
  sendTimeoutMs?: number;
  /** How long a claimed delivery stays this sender's (default 30 s); must exceed `sendTimeoutMs`. */
  leaseTtlMs?: number;
  /** How often an idle background sender looks for due deliveries (default 500 ms). */
  pollMs?: number;
  /** Where `secretRef`s are read (default `process.env`). */
  env?: Record<string, string | undefined>;
  /**
   * Non-public targets deliveries may reach, `host` or `host:port` (added to
   * `ADW_DELIVERY_ALLOW_TARGETS`, process-wide while the runtime is open; docs/triggers.md).
   */
  allowTargets?: readonly string[];
}

export interface DrainReport {
  delivered: number;
  failed: number;
  dead: number;
  /** Settles that did not land: the claim had expired and another sender holds the delivery. */
  lost: number;
}

function positiveInt(value: unknown, name: string, max: number): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max)) {
    throw new WorkflowError('delivery.bad-option', `${name} must be an integer from 1 to ${max}`);
  }
}

/** Checks delivery options (`delivery.bad-option`) and fills in the defaults. */
export function deliveryOptionsOf(o: DeliveryOptions = {}): Required<Omit<DeliveryOptions, 'env' | 'allowTargets'>> & { env: Record<string, string | undefined> } {
  positiveInt(o.maxAttempts, 'delivery maxAttempts', deliveryLimits.attemptsMax);
  positiveInt(o.backoffBaseMs, 'delivery backoffBaseMs', deliveryLimits.backoffMsMax);
  positiveInt(o.backoffMaxMs, 'delivery backoffMaxMs', deliveryLimits.backoffMsMax);
  positiveInt(o.sendTimeoutMs, 'delivery sendTimeoutMs', 10 * 60_000);
  positiveInt(o.leaseTtlMs, 'delivery leaseTtlMs', 60 * 60_000);
  positiveInt(o.pollMs, 'delivery pollMs', 60_000);
  if (o.allowTargets !== undefined && !Array.isArray(o.allowTargets)) throw new WorkflowError('delivery.bad-option', 'delivery allowTargets must be a list of host or host:port entries');
  const out = {
    maxAttempts: o.maxAttempts ?? deliveryLimits.attemptsDefault,
    backoffBaseMs: o.backoffBaseMs ?? deliveryLimits.backoffBaseMsDefault,
    backoffMaxMs: o.backoffMaxMs ?? deliveryLimits.backoffMsMax,
    sendTimeoutMs: o.sendTimeoutMs ?? deliveryLimits.sendTimeoutMsDefault,
    leaseTtlMs: o.leaseTtlMs ?? Math.max(deliveryLimits.leaseTtlMsDefault, 2 * (o.sendTimeoutMs ?? 0)),
    pollMs: o.pollMs ?? deliveryLimits.pollMsDefault,
    env: o.env ?? process.env,
  };
  // A claim that expires while its send still runs would let a second sender send it at once.
  if (out.leaseTtlMs <= out.sendTimeoutMs) throw new WorkflowError('delivery.bad-option', `delivery leaseTtlMs (${out.leaseTtlMs}) must exceed sendTimeoutMs (${out.sendTimeoutMs})`);
  return out;
}

/** The delay before attempt `attempts + 1`: base · 2^(attempts−1), capped, plus up to 50 % jitter (`random` in [0, 1)). */
export function backoffMs(attempts: number, base: number, max: number, random: number): number {
  const exp = Math.min(max, base * 2 ** Math.min(30, Math.max(0, attempts - 1)));
  return Math.min(max, Math.round(exp + exp * 0.5 * random));
}

export class DeliverySender {
  private readonly o: ReturnType<typeof deliveryOptionsOf>;
  private readonly loop: PollLoop;

  constructor(
    private readonly outbox: DeliveryOutbox,
    private readonly owner: string,
    options: DeliveryOptions,
    private readonly now: () => number,
    private readonly log: HostLog,
  ) {
    this.o = deliveryOptionsOf(options);
    this.loop = new PollLoop(async () => {
      await this.drain().catch((err) => this.log('warn', `sending deliveries failed: ${(err as Error).message}`));
      return false;
    }, this.o.pollMs);
  }

  get options() {
    return this.o;
  }

  /** Sends one claimed delivery and settles it. */
  private async deliver(d: ClaimedDelivery): Promise<keyof DrainReport> {
    const secretRef = d.target.secretRef;
    const secret = secretRef !== undefined ? this.o.env[secretRef] : undefined;
    const tokenRef = d.target.kind === 'dingtalk' ? d.target.accessTokenRef : undefined;
    const accessToken = tokenRef !== undefined ? this.o.env[tokenRef] : undefined;
    let result: SendResult;
    if (secretRef !== undefined && (secret === undefined || secret === '')) {
      result = { ok: false, retryable: true, error: `delivery.secret-missing: the environment variable ${secretRef} named by the target's secretRef is not set in this process` };
    } else if (tokenRef !== undefined && (accessToken === undefined || accessToken === '')) {
      result = { ok: false, retryable: true, error: `delivery.secret-missing: the environment variable ${tokenRef} named by the target's accessTokenRef is not set in this process` };
    } else {
      // Loaded with the first delivery sent: a process that never sends one never loads it.
      const { sendDelivery } = await import('./send.js');
      result = await sendDelivery(d, { ...(secret !== undefined ? { secret } : {}), ...(accessToken !== undefined ? { accessToken } : {}), timeoutMs: this.o.sendTimeoutMs, now: this.now() });
    }
    const now = this.now();
    let settlement: DeliverySettlement;
    let kind: keyof DrainReport;
    if (result.ok) {
      settlement = { ok: true, statusCode: result.statusCode ?? 200 };
      kind = 'delivered';
    } else if (result.retryable && d.attempts < this.o.maxAttempts) {
      settlement = { ok: false, error: result.error ?? 'delivery failed', ...(result.statusCode !== undefined ? { statusCode: result.statusCode } : {}), retryAt: now + backoffMs(d.attempts, this.o.backoffBaseMs, this.o.backoffMaxMs, Math.random()) };
      kind = 'failed';
    } else {
      settlement = { ok: false, error: result.error ?? 'delivery failed', ...(result.statusCode !== undefined ? { statusCode: result.statusCode } : {}) };
      kind = 'dead';
    }
    if (!(await this.outbox.settle(d.id, this.owner, d.attempts, settlement, now))) {
      this.log('warn', `delivery ${d.id}: attempt ${d.attempts} ended after its claim expired; another sender holds it`);
      return 'lost';
    }
    if (kind === 'dead') this.log('warn', `delivery ${d.id} is dead after ${d.attempts} attempt(s): ${settlement.ok ? '' : settlement.error}`);
    else if (kind === 'failed') this.log('info', `delivery ${d.id} attempt ${d.attempts} failed: ${settlement.ok ? '' : settlement.error}`);
    return kind;
  }

  /** Claims and sends what is due now, until nothing is; answers what happened. */
  async drain(): Promise<DrainReport> {
    const report: DrainReport = { delivered: 0, failed: 0, dead: 0, lost: 0 };
    for (;;) {
      const claimed = await this.outbox.claim(this.owner, deliveryLimits.claimBatchMax, this.o.leaseTtlMs, this.now());
      if (claimed.length === 0) return report;
      const kinds = await Promise.all(claimed.map((d) => this.deliver(d)));
      for (const k of kinds) report[k] += 1;
    }
  }

  /** Sends in the background until `stop()`: drains, then polls every `pollMs`. */
  start(): void {
    this.loop.start();
  }

  /** Looks for due deliveries now rather than at the next poll. */
  wake(): void {
    this.loop.wake();
  }

  /** Stops the background loop; a send in progress finishes and is settled first. */
  stop(): Promise<void> {
    return this.loop.stop();
  }
}

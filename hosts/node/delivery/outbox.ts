// The SDK's face of the delivery outbox: list, get and retry deliveries, and this process's
// sender of them (built on first use, so a process that never sends loads no HTTP client).
import type { DeliveryOutbox } from '../../core/delivery-outbox.js';
import type { HostLog } from '../../core/types.js';
import { WorkflowError } from '../sdk/errors.js';
import type { RuntimeDeliveries } from '../sdk/runtime-types.js';
import { deliveryLimits } from '../limits.js';
import { DeliverySender, type DeliveryOptions } from './deliverer.js';

/** The outbox's verbs over `outbox`, sent by this process as `ownerId`. */
export function runtimeDeliveries(outbox: DeliveryOutbox, ownerId: string, options: DeliveryOptions, now: () => number, log: HostLog): RuntimeDeliveries {
  let senderInstance: DeliverySender | undefined;
  const sender = (): DeliverySender => (senderInstance ??= new DeliverySender(outbox, ownerId, options, now, log));
  const found = async (id: string) => {
    const d = await outbox.get(id);
    if (!d) throw new WorkflowError('delivery.not-found', `no delivery ${JSON.stringify(id)} in this store`, { id });
    return d;
  };
  return {
    drain: () => sender().drain(),
    start: () => sender().start(),
    stop: async () => senderInstance?.stop(),
    list: async (filter) => outbox.list({ ...filter, limit: Math.min(filter?.limit ?? deliveryLimits.listDefault, deliveryLimits.listMax) }),
    get: found,
    retry: async (id) => {
      const before = await found(id);
      if (!(await outbox.retry(id, now()))) {
        throw new WorkflowError('delivery.not-retryable', `delivery ${id} is ${before.state}${before.lease ? `, held by sender ${before.lease.owner}` : ''}: only a dead delivery (or a pending one no sender holds) is retried`, { id, state: before.state });
      }
      senderInstance?.wake();
      return found(id);
    },
  };
}

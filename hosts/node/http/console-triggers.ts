// The console's trigger and delivery routes: bindings with their revisions and state, the ingress
// journal (a `deduplicated` record names the run the first event started; a `rejected` one says
// why), and result deliveries with their dead letters. Retrying a dead delivery is an operator
// action (the caller checks the token's role before calling `retryDelivery`).
//
//   GET  /v1/console/bindings                              every revision of every binding
//   GET  /v1/console/ingress?binding=&status=&run=&after=&limit=
//                                                          records in id order; `nextAfter` pages on
//   GET  /v1/console/deliveries?state=&run=&limit=         newest first
//   POST /v1/console/deliveries/:id/retry                  a dead delivery made pending again
import type { ConsoleHost } from './console-routes.js';
import type { IngressStatus } from '../stores/trigger-storage.js';
import type { DeliveryState } from '../../core/delivery-outbox.js';
import { triggerLimits } from '../limits.js';
import { HttpError, intParam } from './http-error.js';

const ingressStatuses: readonly string[] = ['received', 'rejected', 'deduplicated', 'launched', 'missed'];
const deliveryStates: readonly string[] = ['pending', 'delivered', 'dead'];

/** Bindings without their config (which names secrets' environment variables, not secrets, but the console has no use for it). */
export async function listBindings(rt: ConsoleHost) {
  const all = await rt.bindings.list();
  return {
    bindings: all.map((b) => ({
      id: b.id,
      revision: b.revision,
      source: b.source,
      state: b.state,
      target: `${b.target.id}@${b.target.revision}`,
      createdAt: b.createdAt,
      createdBy: b.createdBy,
      ...(b.publishedAt !== undefined ? { publishedAt: b.publishedAt } : {}),
      ...(b.disabledAt !== undefined ? { disabledAt: b.disabledAt } : {}),
      ...(b.description !== undefined ? { description: b.description } : {}),
    })),
  };
}

export async function listIngress(rt: ConsoleHost, url: URL) {
  const q = url.searchParams;
  const status = q.get('status') || undefined;
  if (status !== undefined && !ingressStatuses.includes(status)) throw new HttpError(400, 'http.bad-request', `status is one of ${ingressStatuses.join(', ')}`);
  const limit = intParam(q.get('limit'), 'limit', triggerLimits.ingressListDefault, triggerLimits.ingressListMax) || triggerLimits.ingressListDefault;
  const after = intParam(q.get('after'), 'after', 0);
  const bindingId = q.get('binding') || undefined;
  const runId = q.get('run') || undefined;
  const records = await rt.triggerStorage.listIngress({ limit: limit + 1, afterId: after, ...(bindingId ? { bindingId } : {}), ...(status ? { status: status as IngressStatus } : {}), ...(runId ? { runId } : {}) });
  const page = records.slice(0, limit);
  return { records: page, ...(records.length > limit ? { nextAfter: page.at(-1)!.id } : {}) };
}

export async function listDeliveries(rt: ConsoleHost, url: URL) {
  const q = url.searchParams;
  const state = q.get('state') || undefined;
  if (state !== undefined && !deliveryStates.includes(state)) throw new HttpError(400, 'http.bad-request', `state is one of ${deliveryStates.join(', ')}`);
  const limit = intParam(q.get('limit'), 'limit', triggerLimits.ingressListDefault, triggerLimits.ingressListMax) || triggerLimits.ingressListDefault;
  const runId = q.get('run') || undefined;
  return { deliveries: await rt.deliveries.list({ limit, ...(state ? { state: state as DeliveryState } : {}), ...(runId ? { runId } : {}) }) };
}

export function retryDelivery(rt: ConsoleHost, id: string) {
  return rt.deliveries.retry(id);
}

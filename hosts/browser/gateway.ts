// The browser host has no gateway: recorded replay answers every capability from the journal
// and never calls one. This gateway exists so that a mistake (an activation that stages a
// request in the page) fails loudly with a stable code instead of calling anything.
import type { Gateway } from '../core/gateway.js';
import type { CapabilityOutcome, GatewayRequest } from '../core/types.js';

export const refusedCode = 'gateway.unavailable';

export function refusingGateway(): Gateway {
  return {
    async execute(request: GatewayRequest): Promise<CapabilityOutcome> {
      return { ok: false, error: { code: refusedCode, message: `the browser replay host calls no gateway (${request.kind}:${request.name}, ${request.invocationId})`, retryable: false } };
    },
    effects() {
      return {};
    },
  };
}

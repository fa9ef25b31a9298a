// `human.approval@1`: asks a person through the gateway and waits; a rejection fails the node
// unless `onReject` is `continue`.
import type { Json } from '../json.js';
import { completeCall, startCall } from './call.js';
import type { NodeKind } from './kind.js';

export const approval: NodeKind = {
  uses: 'human.approval@1',
  label: 'approval',
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: { prompt: { type: 'string', maxLength: 10_000 }, approvers: { type: 'array', items: { type: 'string' } }, onReject: { enum: ['fail', 'continue'] } },
  },
  capability: 'approval',
  implementationDigest: 'builtin:human.approval@1:1',
  impliedCapability: () => 'approval',
  // Asking again for the same decision does no harm.
  effect: () => 'idempotent',
  request(spec, config) {
    const extra: Record<string, Json> = {};
    if (config.prompt !== undefined) extra.prompt = config.prompt;
    if (config.approvers !== undefined) extra.approvers = config.approvers;
    return { name: spec.id, config: extra };
  },
  start(a, spec, attempt, timeoutAt) {
    const invocationId = startCall(a, spec, attempt, timeoutAt);
    if (invocationId !== undefined) a.emit('node.waiting', { reason: 'approval' }, { id: spec.id, attempt, invocationId });
  },
  complete(a, spec, inv, fact) {
    const config = (spec.config ?? {}) as Record<string, any>;
    completeCall(a, inv, fact, undefined, (output) => {
      const decision = (output ?? {}) as Record<string, Json>;
      if (decision.approved === true || config.onReject === 'continue') return undefined;
      return { code: 'approval.rejected', message: `${String(decision.by ?? 'an approver')} rejected ${inv.nodeId}${decision.comment ? `: ${String(decision.comment)}` : ''}`, retryable: false };
    });
  },
};

// What the kinds that call the gateway share: which capability a call needs and whether the run
// may use it, the request the host receives, its effect class, and how its outcome settles the
// node.
import type { Json } from '../json.js';
import { limits } from '../limits.js';
import { scopeCovers } from '../protocol/authority.js';
import type { ErrorInfo } from '../protocol/events.js';
import type { Effect } from '../protocol/statuses.js';
import type { NodeSpec } from '../protocol/template.js';
import type { Activation, Fact, GatewayRequest } from '../runtime/activation.js';
import { resolveInputs } from '../runtime/bindings.js';
import type { Invocation } from '../state/types.js';
import type { NodeConfig } from './kind.js';

/** Does a granted capability pattern (`tool:*`, `*`, `tool:search`) cover a capability? */
export function capabilityCovers(pattern: string, capability: string): boolean {
  return scopeCovers(pattern, capability);
}

export function grantedCapability(a: Activation, spec: NodeSpec, uses: string, config: Record<string, Json>): string | ErrorInfo {
  const capability = a.kindOf(uses).impliedCapability!(config)!;
  const declared = spec.requires ?? [capability];
  const allowed = a.graph.template.spec.requires ?? [];
  const scopes = a.run.authority.scopes;
  if (!declared.some((d) => capabilityCovers(d, capability))) {
    return { code: 'capability.denied', message: `node ${spec.id} does not declare ${capability}`, retryable: false };
  }
  if (!allowed.some((p) => capabilityCovers(p, capability))) {
    return { code: 'capability.denied', message: `${capability} is not in the template's requires`, retryable: false };
  }
  if (!scopes.some((p) => capabilityCovers(p, capability))) {
    return { code: 'capability.denied', message: `authority ${a.run.authority.id} does not grant ${capability}`, retryable: false };
  }
  return capability;
}

/** The effect class of a call: a read-only node is read-only whatever it calls. */
export function effectOf(a: Activation, spec: NodeSpec, uses: string, config: NodeConfig): Effect {
  if (spec.readOnly) return 'read-only';
  return a.kindOf(uses).effect?.(config) ?? 'unknown';
}

/** The secret references a call passes on for the gateway to resolve. */
export function withSecretRefs(config: NodeConfig, extra: Record<string, Json> = {}): Record<string, Json> {
  if (config.credentialRef !== undefined) extra.credentialRef = config.credentialRef;
  if (config.connectionRef !== undefined) extra.connectionRef = config.connectionRef;
  return extra;
}

export function requestFor(a: Activation, spec: NodeSpec, uses: string, config: NodeConfig, invocationId: string, attempt: number, input: Json, item?: number): GatewayRequest {
  const kind = a.kindOf(uses);
  const { name, config: extra } = kind.request!(spec, config);
  const authority = { id: a.run.authority.id, scopes: [...a.run.authority.scopes] };
  const request: GatewayRequest = { invocationId, runId: a.run.runId, nodeId: spec.id, attempt, kind: kind.capability!, name, input, effect: effectOf(a, spec, uses, config), authority };
  if (item !== undefined) request.item = item;
  if (Object.keys(extra).length > 0) request.config = extra;
  const timeoutAt = a.run.nodes[spec.id].timeoutAt;
  if (timeoutAt !== undefined) request.deadlineAt = timeoutAt;
  return request;
}

export function stageRequest(a: Activation, request: GatewayRequest, reissued = false): void {
  a.emit(
    'capability.requested',
    { invocationId: request.invocationId, kind: request.kind, name: request.name, effect: request.effect, input: request.input, item: request.item, reissued: reissued || undefined },
    { id: request.nodeId, attempt: request.attempt, invocationId: request.invocationId, item: request.item },
  );
  a.requests.push(reissued ? { ...request, reissued: true } : request);
}

/** Starts a node that makes one call: checks the capability, stages the request. */
export function startCall(a: Activation, spec: NodeSpec, attempt: number, timeoutAt: number | undefined): string | undefined {
  const config = (spec.config ?? {}) as NodeConfig;
  const invocationId = a.deriveId('iv', a.run.runId, spec.id, attempt, '');
  a.emit('node.started', { timeoutAt }, { id: spec.id, attempt, invocationId });
  const granted = grantedCapability(a, spec, spec.uses, config);
  if (typeof granted !== 'string') {
    a.settle.failNode(a, spec.id, granted);
    return undefined;
  }
  stageRequest(a, requestFor(a, spec, spec.uses, config, invocationId, attempt, resolveInputs(spec.inputs, a.run)));
  return invocationId;
}

/**
 * The outcome of a node's one call: an error fails the node (retried when its policy allows);
 * an output is committed when `accept` (if any) does not turn it into an error first.
 */
export function completeCall(a: Activation, inv: Invocation, fact: Extract<Fact, { type: 'capability-completed' }>, outputSchema?: Json, accept?: (output: Json) => ErrorInfo | undefined): void {
  if (!fact.ok) {
    a.settle.failNode(a, inv.nodeId, normaliseError(a, fact.error), { unknownEffect: inv.effect === 'unknown' });
    return;
  }
  const refused = accept?.(fact.output ?? null);
  if (refused) {
    a.settle.failNode(a, inv.nodeId, refused);
    return;
  }
  a.settle.commitOutput(a, inv.nodeId, fact.output ?? null, outputSchema);
}

/**
 * A capability's error as the engine records and decides on it. With `errors-v2` a `retryable`
 * that is not a boolean is left out rather than kept as `undefined`: the state must hold exactly
 * what the journal's JSON holds, or a value that passed live would differ after a rebuild (a
 * foreach's `failures` failed its own output check live and not after a restart).
 */
export function normaliseError(a: Activation, error: { code?: unknown; message?: unknown; retryable?: unknown } | undefined): ErrorInfo {
  const info: ErrorInfo = {
    code: typeof error?.code === 'string' && error.code.length > 0 ? error.code : 'capability.failed',
    message: typeof error?.message === 'string' ? error.message.slice(0, limits.errorMessageCharsMax) : 'the capability failed',
  };
  if (typeof error?.retryable === 'boolean') info.retryable = error.retryable;
  else if (!a.has('errors-v2')) info.retryable = undefined;
  return info;
}

// `core.foreach@1`: runs its body (a tool call, an agent run, a workflow call, a script or a node
// of a host type) once per item of its `items` input, at most `maxConcurrency` at a time. Its
// output is the results in item order and the failures; `failurePolicy` decides whether one
// failed item fails it.
import type { Json } from '../json.js';
import { limits } from '../limits.js';
import type { ErrorInfo } from '../protocol/events.js';
import type { NodeSpec } from '../protocol/template.js';
import type { Activation } from '../runtime/activation.js';
import { resolveBinding } from '../runtime/bindings.js';
import { agentConfig } from './agent-run.js';
import { effectOf, grantedCapability, normaliseError, requestFor, stageRequest } from './call.js';
import { impliedCapability, nodeKinds } from './registry.js';
import type { CallOutcome, NodeConfig, NodeKind } from './kind.js';
import { checkScriptSyntax, scriptConfig } from './script.js';
import { toolConfig } from './tool-call.js';
import { checkAgainst } from '../compiler/schemas.js';
import { workflowConfig } from './workflow-call.js';

type Body = { uses: string; config: NodeConfig };

/** The engine's own node types: a body of any other type is one of the host's definitions. */
const engineUses = ['core.start@1', 'core.end@1', 'core.condition@1', 'core.script@1', 'core.foreach@1', 'workflow.call@1', 'tool.call@1', 'agent.run@1', 'human.approval@1'];

const bodyOf = (spec: NodeSpec): Body => (spec.config as NodeConfig).body;

export const foreach: NodeKind = {
  uses: 'core.foreach@1',
  label: 'foreach',
  configSchema: {
    type: 'object',
    required: ['body'],
    additionalProperties: false,
    properties: {
      maxItems: { type: 'integer', minimum: 1, maximum: 100_000 },
      maxConcurrency: { type: 'integer', minimum: 1, maximum: 256 },
      failurePolicy: { enum: ['fail-fast', 'continue'] },
      body: {
        oneOf: [
          { type: 'object', required: ['uses', 'config'], additionalProperties: false, properties: { uses: { const: 'tool.call@1' }, config: toolConfig } },
          { type: 'object', required: ['uses', 'config'], additionalProperties: false, properties: { uses: { const: 'agent.run@1' }, config: agentConfig } },
          { type: 'object', required: ['uses', 'config'], additionalProperties: false, properties: { uses: { const: 'workflow.call@1' }, config: workflowConfig } },
          { type: 'object', required: ['uses', 'config'], additionalProperties: false, properties: { uses: { const: 'core.script@1' }, config: scriptConfig } },
          // A host's node definition (nodes/custom.ts): its config is checked against its schema in `validate`.
          { type: 'object', required: ['uses', 'config'], additionalProperties: false, properties: { uses: { type: 'string', pattern: '^[a-z][a-z0-9.-]*@[0-9]+$', not: { enum: engineUses } }, config: { type: 'object' } } },
        ],
      },
    },
  },
  implementationDigest: 'builtin:core.foreach@1:2',
  impliedCapability: (config) => (config.body ? impliedCapability(config.body.uses, config.body.config) : undefined),
  calledWorkflows: (config) => nodeKinds.get(config.body?.uses)?.calledWorkflows?.(config.body.config) ?? [],
  callOf: bodyOf,
  validate(node, { at, config, inputs, add, checkSyntax, kindOf }) {
    if (!('items' in inputs)) add('node.inputs-missing', `${at}/inputs`, 'a foreach needs an input named "items" (an array)');
    if (config.body?.uses === 'core.script@1') checkScriptSyntax(config.body.config?.source, `${at}/config/body/config/source`, add, checkSyntax);
    const uses = config.body?.uses;
    if (typeof uses !== 'string' || engineUses.includes(uses) || config.body?.config === null || typeof config.body?.config !== 'object') return;
    // A body of a host type: its definition's config schema, as for a node of that type.
    const kind = kindOf(uses);
    if (!kind) {
      add('node.unknown-type', `${at}/config/body/uses`, `unknown node type ${JSON.stringify(uses)} for the foreach's body`);
      return;
    }
    for (const p of checkAgainst(kind.configSchema, config.body.config)) add('node.config-invalid', `${at}/config/body/config${p.pointer}`, p.message);
  },
  start: startForeach,
  complete(a, spec, inv, fact) {
    const outcome: CallOutcome = fact.ok ? { ok: true, output: fact.output ?? null } : { ok: false, error: normaliseError(a, fact.error) };
    settleItemAndContinue(a, spec, inv.item!, inv.attempt, outcome, inv.effect === 'unknown');
  },
  /**
   * Its items in flight are cancelled. It is never retried on a guess: a retry runs every item
   * again, those that took effect included, so a body whose effect is unknown is not retried.
   */
  timeOut(a, spec, message) {
    const body = bodyOf(spec);
    const safe = effectOf(a, spec, body.uses, body.config ?? {}) !== 'unknown';
    a.settle.cancelInvocations(a, (inv) => inv.nodeId === spec.id, 'node timed out');
    a.settle.failNode(a, spec.id, { code: 'node.timeout', message: safe ? message : `${message}; its items have effects that are not known to be safe to repeat, so it is not retried`, retryable: safe });
  },
};

function startForeach(a: Activation, spec: NodeSpec, attempt: number, timeoutAt: number | undefined): void {
  const config = (spec.config ?? {}) as NodeConfig;
  const items = spec.inputs?.items ? resolveBinding(spec.inputs.items, a.run) : undefined;
  const maxItems = Math.min(config.maxItems ?? limits.foreachItemsDefault, limits.foreachItemsMax);
  if (!Array.isArray(items)) {
    a.emit('node.started', { timeoutAt }, { id: spec.id, attempt });
    a.settle.failNode(a, spec.id, { code: 'foreach.items-not-array', message: `the "items" input of ${spec.id} is ${items === undefined ? 'missing' : typeof items}, not an array`, retryable: false });
    return;
  }
  if (items.length > maxItems) {
    a.emit('node.started', { timeoutAt }, { id: spec.id, attempt });
    a.settle.failNode(a, spec.id, { code: 'foreach.too-many-items', message: `${items.length} items exceed maxItems ${maxItems}`, retryable: false });
    return;
  }
  const started = {
    items,
    maxConcurrency: Math.min(config.maxConcurrency ?? limits.foreachConcurrencyDefault, limits.foreachConcurrencyMax),
    failurePolicy: config.failurePolicy ?? 'fail-fast',
  };
  a.emit('node.started', { timeoutAt, foreach: started }, { id: spec.id, attempt });
  dispatchItems(a, spec);
}

/** Starts items up to the concurrency bound. Iterative: script items settle inside the loop. */
function dispatchItems(a: Activation, spec: NodeSpec): void {
  const node = a.run.nodes[spec.id];
  const f = node.foreach!;
  while (node.status === 'running' && f.running < f.maxConcurrency && f.next < f.items.length) startItem(a, spec, f.next, 1);
  finishForeachIfDone(a, spec.id);
}

function startItem(a: Activation, spec: NodeSpec, index: number, itemAttempt: number): void {
  const node = a.run.nodes[spec.id];
  const body = bodyOf(spec);
  const input = node.foreach!.items[index];
  const invocationId = a.deriveId('iv', a.run.runId, spec.id, node.attempt, `${index}:${itemAttempt}`);
  const ref = { id: spec.id, attempt: itemAttempt, invocationId, item: index };
  a.emit('node.item-started', { index }, ref);
  const evaluate = a.kindOf(body.uses).evaluate;
  if (evaluate) {
    settleItem(a, spec, index, itemAttempt, evaluate(a, body.config, input));
    return;
  }
  const granted = grantedCapability(a, spec, body.uses, body.config);
  if (typeof granted !== 'string') {
    settleItem(a, spec, index, itemAttempt, { ok: false, error: granted });
    return;
  }
  stageRequest(a, requestFor(a, spec, body.uses, body.config, invocationId, itemAttempt, input, index));
}

/**
 * Settles one foreach item. `unknownEffect`: the outcome is the error of a call whose effect is
 * `unknown`, which (with `effects-v2`) is retried only when the error says `retryable: true`.
 */
function settleItem(a: Activation, spec: NodeSpec, index: number, itemAttempt: number, outcome: CallOutcome, fromUnknown = false, unknownEffect = false): void {
  const ref = { id: spec.id, attempt: itemAttempt, item: index };
  let result = outcome;
  if (result.ok) {
    const problem = a.settle.outputProblem(result.output);
    if (problem) result = { ok: false, error: { code: 'node.output-invalid', message: `item ${index}: ${problem}`, retryable: true } };
  }
  if (result.ok) {
    a.emit('node.item-committed', { index, output: result.output, fromUnknown: fromUnknown || undefined }, ref);
  } else {
    const retry = spec.retry;
    const canRetry = retry !== undefined && itemAttempt < retry.maxAttempts && a.settle.isRetryable(a, result.error, retry.retryOn, unknownEffect && outcome.ok === false);
    a.emit('node.item-failed', { index, error: result.error, final: !canRetry, fromUnknown: fromUnknown || undefined }, ref);
    if (canRetry) {
      startItem(a, spec, index, itemAttempt + 1);
      return;
    }
    if (a.run.nodes[spec.id].foreach!.failurePolicy === 'fail-fast') {
      a.settle.cancelInvocations(a, (inv) => inv.nodeId === spec.id, `item ${index} failed`);
      a.settle.failNode(a, spec.id, { code: 'foreach.item-failed', message: `item ${index} failed: ${result.error.message}`, retryable: false, detail: { index, error: result.error } });
    }
  }
}

/** An item's outcome came back from the gateway: settle it, then start what may start. */
export function settleItemAndContinue(a: Activation, spec: NodeSpec, index: number, itemAttempt: number, outcome: CallOutcome, unknownEffect = false): void {
  settleItem(a, spec, index, itemAttempt, outcome, false, unknownEffect);
  if (a.run.nodes[spec.id].status === 'running') dispatchItems(a, spec);
}

function finishForeachIfDone(a: Activation, id: string): void {
  const node = a.run.nodes[id];
  const f = node.foreach!;
  if (node.status !== 'running' || f.done < f.items.length || f.running > 0) return;
  a.settle.commitOutput(a, id, { results: f.results, failures: f.failures });
}

/** An operator settled one foreach item whose outcome was unknown. */
export function resolveUnknownItem(a: Activation, spec: NodeSpec, index: number, resolution: string, output: Json, failure: string): void {
  const f = a.run.nodes[spec.id].foreach!;
  const attempt = f.attempts[String(index)] ?? 1;
  if (resolution === 'succeeded') settleItem(a, spec, index, attempt, { ok: true, output }, true);
  else if (resolution === 'fail') settleItem(a, spec, index, attempt, { ok: false, error: { code: 'node.resolved-failed', message: failure, retryable: false } as ErrorInfo }, true);
  else startItem(a, spec, index, attempt + 1);
  const node = a.run.nodes[spec.id];
  if (node.status === 'needs-attention' && node.foreach!.unknown.length === 0) {
    a.emit('node.resumed', { reason: 'every unknown item was resolved' }, { id: spec.id, attempt: node.attempt });
    dispatchItems(a, spec);
  }
}

/** After an operator chose `retry`: start again every foreach item whose outcome was unknown. */
export function retryUnknownItems(a: Activation, spec: NodeSpec): void {
  const f = a.run.nodes[spec.id].foreach!;
  for (const index of [...f.unknown]) startItem(a, spec, index, (f.attempts[String(index)] ?? 1) + 1);
  dispatchItems(a, spec);
}

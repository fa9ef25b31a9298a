// Applies the facts of an activation, then lets the frontier advance.
import { applyDefaultsAndCheck, checkAgainst } from '../compiler/schemas.js';
import { EngineError } from '../errors.js';
import { jsonProblem, type Json } from '../json.js';
import { limits } from '../limits.js';
import { isAuthority } from '../protocol/authority.js';
import { grantedCapability, normaliseError, requestFor, stageRequest } from '../nodes/call.js';
import { resolveUnknownItem, retryUnknownItems, settleItemAndContinue } from '../nodes/foreach.js';
import type { CapabilityResult, ErrorInfo } from '../protocol/events.js';
import { utf8Length } from '../utf8.js';
import type { NodeSpec } from '../protocol/template.js';
import type { Invocation } from '../state/types.js';
import type { Activation, Fact } from './activation.js';
import { abandonUnknown, advance, cancelRun, commitOutput, failNode, failRun, isTerminal, startNode } from './advance.js';
import { resolveInputs } from './bindings.js';

export function applyFacts(a: Activation): void {
  for (const fact of a.request.facts) applyFact(a, fact);
  if (a.state) advance(a);
}

function applyFact(a: Activation, fact: Fact): void {
  if (fact.type === 'run-requested') {
    acceptRun(a, fact);
    return;
  }
  if (!a.state) throw new EngineError('engine.unknown-run', `run ${a.request.runId} does not exist`);
  switch (fact.type) {
    case 'capability-completed':
      completeCapability(a, fact);
      return;
    case 'capability-unavailable': {
      // A call no longer in flight (settled or abandoned meanwhile) has nothing left to decide.
      const inv = a.run.inflight[fact.invocationId];
      if (inv && !isTerminal(a)) abandonUnknown(a, inv, fact.reason, 'unavailable');
      return;
    }
    case 'cancel-requested':
      if (!isTerminal(a)) cancelRun(a, fact.reason ?? 'cancelled', fact.by ?? a.request.actor ?? 'host');
      return;
    case 'resume-requested':
      resume(a, fact);
      return;
    case 'outcome-resolved':
      resolveOutcome(a, fact);
      return;
    default:
      throw new EngineError('engine.bad-activation', `unknown fact type ${JSON.stringify((fact as { type: unknown }).type)}`);
  }
}

function acceptRun(a: Activation, fact: Extract<Fact, { type: 'run-requested' }>): void {
  if (a.state) throw new EngineError('engine.run-exists', `run ${a.request.runId} already exists`);
  // What a host passes on from its caller: checked before anything is journaled (a deadline of
  // `now + "x"` would be journaled as text, a missing scope list fail every call later).
  if (!isAuthority(fact.authority)) {
    throw new EngineError('run.bad-authority', 'a run needs an authority { id: string, scopes: string[] }');
  }
  if (fact.timeoutMs !== undefined && !(Number.isInteger(fact.timeoutMs) && fact.timeoutMs >= 1 && fact.timeoutMs <= limits.timeoutMsMax)) {
    throw new EngineError('run.bad-timeout', `a run's timeoutMs must be an integer of 1 to ${limits.timeoutMsMax} ms, got ${JSON.stringify(fact.timeoutMs) ?? typeof fact.timeoutMs}`);
  }
  const template = a.graph.template;
  const inputProblem = jsonProblem(fact.input);
  const schema = template.spec.inputSchema;
  // With `inputs-v2` the schema's defaults are part of the input: applied (to a copy) before it
  // is validated, and recorded in `run.accepted`, so replay and every node read the same input.
  const withDefaults = !inputProblem && schema !== undefined && a.has('inputs-v2');
  const input: Json = withDefaults ? (JSON.parse(JSON.stringify(fact.input ?? null)) as Json) : fact.input;
  const schemaProblems = inputProblem || schema === undefined ? [] : withDefaults ? applyDefaultsAndCheck(schema, input) : checkAgainst(schema, input);
  const size = inputProblem ? 0 : JSON.stringify(input ?? null).length;
  if (inputProblem || size > limits.runInputBytesMax || schemaProblems.length > 0) {
    throw new EngineError(
      'run.input-invalid',
      inputProblem
        ? `the run input is not plain JSON: ${inputProblem}`
        : size > limits.runInputBytesMax
          ? `the run input has ${size} characters (at most ${limits.runInputBytesMax})`
          : `the run input does not match the template's inputSchema: ${schemaProblems.map((p) => `${p.pointer || '/'} ${p.message}`).join('; ')}`,
      { problems: schemaProblems as unknown as Json },
    );
  }
  const timeoutMs = fact.timeoutMs ?? template.spec.policies?.timeoutMs;
  if (fact.correlation !== undefined && a.correlation === undefined) a.correlation = fact.correlation;
  // With `capture-v2` a `metadata` run is journaled without payloads from its first event on.
  const metadata = fact.capture === 'metadata' && a.has('capture-v2');
  if (metadata) a.keepsPayloads = false;
  a.emit('run.accepted', {
    input,
    authority: fact.authority,
    templateKey: a.templateKey,
    planHash: a.plan.planHash,
    parentRunId: fact.parentRunId,
    deadlineAt: timeoutMs !== undefined ? a.now + timeoutMs : undefined,
    nodeIds: a.graph.order,
    capture: metadata ? 'metadata' : undefined,
  });
  if (typeof fact.queuedAt === 'number' && Number.isFinite(fact.queuedAt)) a.emit('run.queued', { queuedAt: new Date(fact.queuedAt).toISOString() });
  a.emit('run.started', {});
}

/**
 * A `metadata` run (`capture-v2`) that this engine instance no longer holds in memory: its
 * journal has digests, not the payloads the next nodes would bind, so it cannot continue. It
 * fails with `run.payloads-not-kept` rather than run on missing data; outcomes that arrive with
 * the activation are recorded as `capability.late` evidence, other facts are dropped.
 */
export function failWithoutPayloads(a: Activation): void {
  failRun(a, {
    code: 'run.payloads-not-kept',
    message: `run ${a.run.runId} keeps no payloads (capture mode metadata) and was rebuilt from its journal, which holds only their digests; it cannot continue`,
  });
  for (const fact of a.request.facts) if (fact.type === 'capability-completed') completeCapability(a, fact);
}

function completeCapability(a: Activation, fact: Extract<Fact, { type: 'capability-completed' }>): void {
  const inv = a.run.inflight[fact.invocationId];
  // A payload the host captured as an artifact is recorded by its digest, not inline.
  const outcome: CapabilityResult = fact.ok
    ? fact.artifact
      ? { ok: true, artifact: fact.artifact }
      : { ok: true, output: fact.output ?? null }
    : { ok: false, error: normaliseError(a, fact.error) };
  if (!inv) {
    // Evidence only: a duplicate, a completion after cancellation, or after the run ended.
    a.emit('capability.late', { invocationId: fact.invocationId, reason: isTerminal(a) ? `run ${a.run.status}` : 'not in flight', ...outcome });
    return;
  }
  const ref = { id: inv.nodeId, attempt: inv.attempt, invocationId: inv.invocationId, item: inv.item };
  const tooLarge = outcome.ok && outcome.output !== undefined ? commitOverflow(a, outcome.output) : undefined;
  if (tooLarge) {
    // Recorded as the call's result: a replay reads the same failure from the journal.
    const failed = { type: 'capability-completed' as const, invocationId: fact.invocationId, ok: false as const, error: tooLarge };
    a.emit('capability.completed', { invocationId: inv.invocationId, ok: false, error: tooLarge }, ref);
    const spec = a.graph.nodes.get(inv.nodeId)!;
    a.kindOf(spec.uses).complete!(a, spec, inv, failed);
    return;
  }
  a.emit('capability.completed', { invocationId: inv.invocationId, ...outcome }, ref);
  const spec = a.graph.nodes.get(inv.nodeId)!;
  a.kindOf(spec.uses).complete!(a, spec, inv, fact);
}

/**
 * `run.commit-too-large` when journaling `output` would take this activation's commit past the
 * host's `commitBytesMax`: the output is written twice (`capability.completed` and
 * `node.output-committed`), so it may take at most half of what the commit has left. Under
 * capture `metadata` the journal holds its digest only and it never overflows.
 */
function commitOverflow(a: Activation, output: Json): ErrorInfo | undefined {
  const bound = a.request.commitBytesMax;
  if (bound === undefined || !a.keepsPayloads) return undefined;
  const text = JSON.stringify(output) ?? 'null';
  // A UTF-16 code unit is at most 3 UTF-8 bytes: count exactly only near the bound.
  if (3 * (a.eventChars + 2 * text.length) <= bound) return undefined;
  const size = a.commitBytes() + 2 * utf8Length(text);
  if (size <= bound) return undefined;
  return { code: 'run.commit-too-large', message: `the commit would hold ${size} bytes of events with this output (at most ${bound}, commitBytesMax)`, retryable: false };
}

function resume(a: Activation, fact: Extract<Fact, { type: 'resume-requested' }>): void {
  if (isTerminal(a)) return;
  const by = fact.by ?? a.request.actor ?? 'host';
  a.emit('run.resumed', { by, authority: fact.authority, afterRestart: fact.afterRestart || undefined, effects: fact.effects, ...(fact.afterRestart && fact.attempts ? { attempts: fact.attempts } : {}) });
  if (!fact.afterRestart) return;
  // The host restarted: the outcome of every invocation in flight is unknown.
  for (const inv of Object.values(a.run.inflight)) {
    if (isTerminal(a)) return;
    if (!a.run.inflight[inv.invocationId]) continue;
    const declared = fact.effects?.[`${inv.kind}:${inv.name}`];
    const safe = inv.effect === 'read-only' || inv.effect === 'idempotent' || declared === 'read-only' || declared === 'idempotent';
    if (safe) {
      const spec = a.graph.nodes.get(inv.nodeId)!;
      if (a.kindOf(spec.uses).reissue?.(a, spec, inv)) continue;
      const { uses, config } = a.kindOf(spec.uses).callOf?.(spec) ?? { uses: spec.uses, config: (spec.config ?? {}) as Record<string, any> };
      if (a.has('authority-v2') && denyReissue(a, inv, spec, uses, config)) continue;
      const input = inv.item !== undefined ? a.run.nodes[inv.nodeId].foreach!.items[inv.item] : resolveInputs(spec.inputs, a.run);
      stageRequest(a, requestFor(a, spec, uses, config, inv.invocationId, inv.attempt, input, inv.item), true);
      continue;
    }
    abandonUnknown(a, inv, 'the host restarted before the outcome was recorded; it is unknown whether the call took effect', 'restart', fact.attempts?.[inv.invocationId]);
  }
}

/**
 * A safe call is reissued under the authority of the resume that reissues it (`authority-v2`):
 * when that authority no longer grants it, the call is cancelled and its node (or item) fails
 * with `capability.denied`. Answers whether it was denied.
 */
function denyReissue(a: Activation, inv: Invocation, spec: NodeSpec, uses: string, config: Record<string, any>): boolean {
  const granted = grantedCapability(a, spec, uses, config);
  if (typeof granted === 'string') return false;
  a.emit('capability.cancelled', { invocationId: inv.invocationId, reason: granted.message }, { id: inv.nodeId, attempt: inv.attempt, invocationId: inv.invocationId, item: inv.item });
  a.cancels.push({ invocationId: inv.invocationId, reason: granted.message });
  if (inv.item !== undefined) settleItemAndContinue(a, spec, inv.item, inv.attempt, { ok: false, error: granted });
  else failNode(a, inv.nodeId, granted);
  return true;
}

function resolveOutcome(a: Activation, fact: Extract<Fact, { type: 'outcome-resolved' }>): void {
  const node = a.run.nodes[fact.nodeId];
  if (!node) throw new EngineError('resolve.unknown-node', `run ${a.run.runId} has no node ${JSON.stringify(fact.nodeId)}`);
  if (node.status !== 'needs-attention') {
    throw new EngineError('resolve.not-needed', `node ${fact.nodeId} is ${node.status}, not needs-attention; nothing to resolve`, { status: node.status });
  }
  const named = a.has('resolve-v2');
  if (named && fact.attentionSeq !== undefined && node.attentionSeq !== undefined && fact.attentionSeq !== node.attentionSeq) {
    // The operator decided on an unknown that is no longer the node's: an earlier resolution
    // (a retry) ran the call again, and its outcome is unknown anew. Deciding that one needs a
    // look at it first.
    throw new EngineError(
      'resolve.stale',
      `node ${fact.nodeId}: the resolution names the unknown recorded at seq ${fact.attentionSeq}, but the node's unknown now is the one recorded at seq ${node.attentionSeq}; look at it (trace) and resolve that one`,
      { nodeId: fact.nodeId, named: fact.attentionSeq, current: node.attentionSeq },
    );
  }
  if (named && fact.attentionSeq === undefined && node.resolvedSeq !== undefined && (node.attentionSeq ?? 0) > node.resolvedSeq) {
    // The unknown came after an earlier resolution of this node (a retry that ran the call again):
    // the same command run twice, or a colleague acting on the same screen, must not settle it
    // unseen.
    throw new EngineError(
      'resolve.unknown-unnamed',
      `node ${fact.nodeId}: its unknown (recorded at seq ${node.attentionSeq}) came after an earlier resolution (seq ${node.resolvedSeq}); look at it (trace) and name it to resolve it (attentionSeq ${node.attentionSeq}, CLI --attention-seq ${node.attentionSeq})`,
      { nodeId: fact.nodeId, current: node.attentionSeq ?? 0, resolvedSeq: node.resolvedSeq },
    );
  }
  const spec = a.graph.nodes.get(fact.nodeId)!;
  if (node.foreach && fact.item !== undefined) {
    if (!node.foreach.unknown.includes(fact.item)) {
      throw new EngineError('resolve.not-needed', `item ${fact.item} of ${fact.nodeId} has no unknown outcome; unknown items: ${node.foreach.unknown.join(', ') || 'none'}`);
    }
    a.emit('node.resolved', { resolution: fact.resolution, by: fact.by, reason: fact.reason, output: fact.output, item: fact.item, ...(named && fact.attentionSeq !== undefined ? { attentionSeq: fact.attentionSeq } : {}) }, { id: fact.nodeId, attempt: node.attempt, item: fact.item });
    resolveUnknownItem(a, spec, fact.item, fact.resolution, fact.output ?? null, `${fact.by} marked item ${fact.item} of ${fact.nodeId} failed${fact.reason ? `: ${fact.reason}` : ''}`);
    return;
  }
  if (node.foreach && fact.resolution === 'succeeded') {
    throw new EngineError('resolve.item-required', `foreach node ${fact.nodeId}: say which item succeeded (item), or resolve the node with retry or fail`);
  }
  a.emit('node.resolved', { resolution: fact.resolution, by: fact.by, reason: fact.reason, output: fact.output, ...(named && fact.attentionSeq !== undefined ? { attentionSeq: fact.attentionSeq } : {}) }, { id: fact.nodeId, attempt: node.attempt });
  const failure = `${fact.by} marked ${fact.nodeId} failed${fact.reason ? `: ${fact.reason}` : ''}`;
  if (a.kindOf(spec.uses).resolve?.(a, spec, fact.resolution, fact.output ?? null, failure)) return;
  switch (fact.resolution) {
    case 'succeeded':
      commitOutput(a, fact.nodeId, fact.output ?? null);
      return;
    case 'fail':
      failNode(a, fact.nodeId, { code: 'node.resolved-failed', message: failure, retryable: false });
      return;
    case 'retry':
      if (node.foreach) {
        a.emit('node.resumed', { by: fact.by }, { id: fact.nodeId, attempt: node.attempt });
        retryUnknownItems(a, spec);
      } else {
        startNode(a, spec, node.attempt + 1);
      }
      return;
    default:
      throw new EngineError('resolve.bad-resolution', `resolution must be succeeded, retry or fail`);
  }
}


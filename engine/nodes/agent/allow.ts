// What an agent loop may use at this moment: the node's allow-lists (`tools`, `skills`) ∩ what
// the node declares (its `requires`, or else everything its config implies) ∩ the template's
// `spec.requires` ∩ the authority the run acts under now (resolved again at every resume and
// operator command). A loop asks this before every model turn and every tool call, so an
// authority narrowed between turns refuses the next call.
import type { ErrorInfo } from '../../protocol/events.js';
import type { NodeSpec } from '../../protocol/template.js';
import type { Activation } from '../../runtime/activation.js';
import { capabilityCovers } from '../call.js';
import type { NodeConfig } from '../kind.js';

/** The capabilities a loop node uses, when it declares none of its own. */
function implied(config: NodeConfig): string[] {
  return [`model:${config.model}`, ...((config.tools ?? []) as string[]).map((t) => `tool:${t}`), ...((config.skills ?? []) as string[]).map((s) => `skill:${s}`)];
}

/**
 * The capabilities a node was found to be allowed, by the authority object they were checked
 * under: what decides is the node's declarations and the template's `requires` (the plan's, fixed)
 * and the authority, which a resume or an operator command replaces in the run's state, never
 * changes in place. A loop asks before every turn and every tool call.
 */
const allowedUnder = new WeakMap<object, WeakMap<NodeSpec, Set<string>>>();

/** Why `capability` may not be used now, or `undefined` when it may. */
export function refusal(a: Activation, spec: NodeSpec, capability: string): ErrorInfo | undefined {
  const authority = a.run.authority;
  let byNode = allowedUnder.get(authority);
  const allowed = byNode?.get(spec);
  if (allowed?.has(capability)) return undefined;
  const denied = refused(a, spec, capability);
  if (denied === undefined) {
    if (byNode === undefined) allowedUnder.set(authority, (byNode = new WeakMap()));
    if (allowed === undefined) byNode.set(spec, new Set([capability]));
    else allowed.add(capability);
  }
  return denied;
}

function refused(a: Activation, spec: NodeSpec, capability: string): ErrorInfo | undefined {
  const config = (spec.config ?? {}) as NodeConfig;
  const declared = spec.requires ?? implied(config);
  const denied = (message: string): ErrorInfo => ({ code: 'capability.denied', message, retryable: false });
  if (!declared.some((d) => capabilityCovers(d, capability))) return denied(`node ${spec.id} does not declare ${capability}`);
  if (!(a.graph.template.spec.requires ?? []).some((p) => capabilityCovers(p, capability))) return denied(`${capability} is not in the template's requires`);
  if (!a.run.authority.scopes.some((p) => capabilityCovers(p, capability))) return denied(`authority ${a.run.authority.id} does not grant ${capability}`);
  return undefined;
}

/** Why the tool may not be called now: not in the node's `tools`, or not granted. */
export function toolRefusal(a: Activation, spec: NodeSpec, name: string): ErrorInfo | undefined {
  const tools = ((spec.config as NodeConfig | undefined)?.tools ?? []) as string[];
  if (!tools.includes(name)) return { code: 'agent.tool-refused', message: `tool ${JSON.stringify(name)} is not in node ${spec.id}'s tools`, retryable: false };
  const denied = refusal(a, spec, `tool:${name}`);
  return denied ? { code: 'agent.tool-refused', message: denied.message, retryable: false } : undefined;
}

/**
 * The allow-lists a loop node may use, by the authority they were worked out under and the node:
 * the same for every turn until a resume or an operator command replaces the authority.
 */
const listsUnder = new WeakMap<object, WeakMap<NodeSpec, { tools?: readonly string[]; skills?: readonly string[] }>>();

/**
 * The entries of an allow-list (`tools` or `skills`) that may be used now, in their order. The
 * answer is kept for the authority and the node, and is shared: it is never changed.
 */
export function allowedNow(a: Activation, spec: NodeSpec, member: 'tools' | 'skills'): readonly string[] {
  const authority = a.run.authority;
  let byNode = listsUnder.get(authority);
  if (byNode === undefined) listsUnder.set(authority, (byNode = new WeakMap()));
  let lists = byNode.get(spec);
  if (lists === undefined) byNode.set(spec, (lists = {}));
  const kept = lists[member];
  if (kept !== undefined) return kept;
  const list = ((spec.config as NodeConfig | undefined)?.[member] ?? []) as string[];
  const prefix = member === 'tools' ? 'tool' : 'skill';
  return (lists[member] = list.filter((name) => refusal(a, spec, `${prefix}:${name}`) === undefined));
}

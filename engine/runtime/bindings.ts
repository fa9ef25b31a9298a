// Resolution of value bindings. There are exactly three sources: a literal, a path into the run
// input, and a path into the committed output of an upstream node. Nothing else is reachable.
import { canonicalJson } from '../hash.js';
import { getPointer, type Json } from '../json.js';
import type { Binding } from '../protocol/template.js';
import type { ErrorInfo } from '../protocol/events.js';
import type { RunState } from '../state/types.js';

export function resolveBinding(binding: Binding, state: RunState): Json | undefined {
  switch (binding.source) {
    case 'literal':
      return binding.value;
    case 'input':
      return getPointer(state.input, binding.path) as Json | undefined;
    case 'output': {
      const node = state.nodes[binding.nodeId];
      if (!node || node.status !== 'completed') return undefined;
      return getPointer(node.output, binding.path ?? '') as Json | undefined;
    }
    default:
      return undefined;
  }
}

/**
 * A binding to an output path that the upstream node completed without. With `bindings-v2` that
 * is an error of the node (`binding.missing`), not an absent value: the node would otherwise run
 * on an input that silently lost a member. A node that did not complete (skipped on a branch not
 * taken) still leaves its bindings out, which is how joins after a condition work.
 */
export function missingBinding(bindings: Record<string, Binding> | undefined, state: RunState, owner: string): ErrorInfo | undefined {
  for (const [name, binding] of Object.entries(bindings ?? {})) {
    if (binding.source !== 'output') continue;
    const node = state.nodes[binding.nodeId];
    if (!node || node.status !== 'completed') continue;
    const path = binding.path ?? '';
    if (getPointer(node.output, path) !== undefined) continue;
    return {
      code: 'binding.missing',
      message: `${owner}: input ${JSON.stringify(name)} is bound to ${binding.nodeId}${path || '/'}, which the output of ${binding.nodeId} does not have`,
      retryable: false,
      detail: { input: name, nodeId: binding.nodeId, path },
    };
  }
  return undefined;
}

/** The input object of a node: each named binding resolved; unresolvable ones are left out. */
export function resolveInputs(bindings: Record<string, Binding> | undefined, state: RunState): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [name, binding] of Object.entries(bindings ?? {})) {
    const value = resolveBinding(binding, state);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function same(a: Json | undefined, b: Json | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return canonicalJson(a) === canonicalJson(b);
}

function ordered(a: Json | undefined, b: Json | undefined): boolean {
  return (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
}

/** The fixed operators of `core.condition@1`. */
export function evaluateCondition(operator: string, left: Json | undefined, right: Json | undefined): boolean {
  switch (operator) {
    case 'eq':
      return same(left, right);
    case 'ne':
      return !same(left, right);
    case 'gt':
      return ordered(left, right) && (left as number) > (right as number);
    case 'gte':
      return ordered(left, right) && (left as number) >= (right as number);
    case 'lt':
      return ordered(left, right) && (left as number) < (right as number);
    case 'lte':
      return ordered(left, right) && (left as number) <= (right as number);
    case 'in':
      return Array.isArray(right) && right.some((r) => same(r, left));
    case 'not-in':
      return Array.isArray(right) && !right.some((r) => same(r, left));
    case 'contains':
      if (typeof left === 'string' && typeof right === 'string') return left.includes(right);
      return Array.isArray(left) && left.some((l) => same(l, right));
    case 'exists':
      return left !== undefined && left !== null;
    case 'not-exists':
      return left === undefined || left === null;
    case 'truthy':
      return !(left === undefined || left === null || left === false || left === 0 || left === '');
    case 'falsy':
      return left === undefined || left === null || left === false || left === 0 || left === '';
    default:
      return false;
  }
}

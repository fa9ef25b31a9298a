// Node kinds the host defines. A compile or validate request carries the host's definitions
// (`nodeDefinitions`); a plan pins those its templates use (`ExecutionPlan.nodeDefinitions`), and
// the runtime finds a run's kinds through its plan (`kindsOfPlan`), never through global state.
// A node of such a kind makes one gateway call of kind `node`, named by its `uses`, settled like
// `tool.call@1`'s: same retry policy, timeouts and unknown-effect rules, with the pinned effect.
import { canonicalDigest } from '../hash.js';
import { nodeCapability } from '../protocol/authority.js';
import type { HostNodeDefinition, PinnedNodeDefinition } from '../protocol/plan.js';
import type { ValidationError } from '../protocol/template.js';
import { schemaCompileProblem } from '../compiler/schemas.js';
import { completeCall, startCall } from './call.js';
import type { NodeKind } from './kind.js';
import { kindOf as builtInKindOf, nodeKinds } from './registry.js';

export type { HostNodeDefinition };

const usesPattern = /^[a-z][a-z0-9.-]*@[0-9]+$/;
const effects: readonly string[] = ['read-only', 'idempotent', 'unknown'];

/** The kind of a host definition, as a plan pins it. */
export function customKind(uses: string, pinned: PinnedNodeDefinition): NodeKind {
  const capability = nodeCapability(uses);
  return {
    uses,
    label: pinned.label ?? uses,
    configSchema: pinned.configSchema,
    capability: 'node',
    implementationDigest: pinned.implementationDigest ?? '',
    impliedCapability: () => capability,
    effect: () => pinned.effect,
    // The gateway refuses a call whose pinned digest is not the implementation it has.
    request: (_spec, config) => ({ name: uses, config: { ...config, implementationDigest: pinned.implementationDigest } }),
    start(a, spec, attempt, timeoutAt) {
      startCall(a, spec, attempt, timeoutAt);
    },
    complete(a, _spec, inv, fact) {
      completeCall(a, inv, fact, pinned.outputSchema);
    },
  };
}

/** A request's definition as the plan pins it (only the members that decide a run). */
export function pinnedOf(d: HostNodeDefinition): PinnedNodeDefinition {
  return {
    configSchema: d.configSchema,
    effect: d.effect ?? 'unknown',
    implementationDigest: d.implementationDigest ?? null,
    ...(d.outputSchema !== undefined ? { outputSchema: d.outputSchema } : {}),
    ...(d.label !== undefined ? { label: d.label } : {}),
  };
}

/** The host's definitions of a request, checked, with their kinds; problems point into the request. */
export interface HostDefinitions {
  definitions: Map<string, HostNodeDefinition>;
  kinds: Map<string, NodeKind>;
  errors: ValidationError[];
}

export function hostDefinitions(list: unknown): HostDefinitions {
  const out: HostDefinitions = { definitions: new Map(), kinds: new Map(), errors: [] };
  if (list === undefined) return out;
  const add = (code: string, pointer: string, message: string) => out.errors.push({ code, pointer, message });
  if (!Array.isArray(list)) {
    add('node.definition-invalid', '/nodeDefinitions', 'nodeDefinitions must be an array');
    return out;
  }
  list.forEach((d: HostNodeDefinition, i) => {
    const at = `/nodeDefinitions/${i}`;
    if (d === null || typeof d !== 'object' || typeof d.uses !== 'string' || !usesPattern.test(d.uses)) {
      add('node.definition-invalid', `${at}/uses`, `a node definition's uses must look like "vendor.name@1", got ${JSON.stringify(d?.uses)}`);
      return;
    }
    if (nodeKinds.has(d.uses)) {
      add('node.definition-shadows-builtin', `${at}/uses`, `${d.uses} is built into the engine; a host definition needs a name of its own`);
      return;
    }
    if (out.definitions.has(d.uses)) {
      add('node.definition-duplicate', `${at}/uses`, `${d.uses} is defined twice`);
      return;
    }
    const problems: string[] = [];
    if (d.effect !== undefined && !effects.includes(d.effect)) problems.push(`effect must be read-only, idempotent or unknown, got ${JSON.stringify(d.effect)}`);
    if (d.implementationDigest !== undefined && d.implementationDigest !== null && (typeof d.implementationDigest !== 'string' || d.implementationDigest.length === 0)) problems.push('implementationDigest must be a non-empty string');
    if (d.label !== undefined && typeof d.label !== 'string') problems.push('label must be a string');
    for (const [name, schema] of [['configSchema', d.configSchema ?? {}], ['outputSchema', d.outputSchema]] as const) {
      if (schema === undefined) continue;
      const problem = schema !== null && typeof schema === 'object' ? schemaCompileProblem(schema) : 'it is not an object';
      if (problem) problems.push(`${name} does not compile: ${problem}`);
    }
    if (problems.length > 0) {
      add('node.definition-invalid', at, `node definition ${d.uses}: ${problems.join('; ')}`);
      return;
    }
    const definition = { ...d, configSchema: d.configSchema ?? {} };
    out.definitions.set(d.uses, definition);
    out.kinds.set(d.uses, customKind(d.uses, pinnedOf(definition)));
  });
  return out;
}

/**
 * The node-definition-set hash of the engine's definitions plus the host's: the engine's own
 * when the host has none, else the digest of both (the host's sorted by `uses`).
 */
export function setHashWithHost(engineHash: string, definitions: ReadonlyMap<string, HostNodeDefinition>): string {
  if (definitions.size === 0) return engineHash;
  const custom = [...definitions.values()]
    .map((d) => ({ uses: d.uses, schemaHash: canonicalDigest(d.configSchema ?? {}), implementationDigest: d.implementationDigest ?? null }))
    .sort((a, b) => (a.uses < b.uses ? -1 : a.uses > b.uses ? 1 : 0));
  return canonicalDigest({ engine: engineHash, custom });
}

const planKinds = new WeakMap<object, (uses: string) => NodeKind>();

/**
 * How a run of `plan` finds the kind of a node: the engine's built-in kinds, then the host
 * definitions the plan pins. Built once per plan object.
 */
export function kindsOfPlan(plan: { nodeDefinitions?: Record<string, PinnedNodeDefinition> }): (uses: string) => NodeKind {
  let lookup = planKinds.get(plan);
  if (!lookup) {
    const pinned = plan.nodeDefinitions;
    if (!pinned) {
      lookup = builtInKindOf;
    } else {
      const custom = new Map(Object.entries(pinned).map(([uses, d]) => [uses, customKind(uses, d)]));
      lookup = (uses) => nodeKinds.get(uses) ?? custom.get(uses) ?? builtInKindOf(uses);
    }
    planKinds.set(plan, lookup);
  }
  return lookup;
}

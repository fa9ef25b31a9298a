// The node kinds this engine knows, in one table. A kind is one file in this folder that exports
// a `NodeKind`; adding one means adding it here (and its test). The order is the order the
// validator lists the known types in.
import { EngineError } from '../errors.js';
import type { Json } from '../json.js';
import { agentRun } from './agent-run.js';
import { approval } from './approval.js';
import { condition } from './condition.js';
import { end } from './end.js';
import { foreach } from './foreach.js';
import type { NodeDefinition, NodeKind } from './kind.js';
import { script } from './script.js';
import { start } from './start.js';
import { toolCall } from './tool-call.js';
import { workflowCall } from './workflow-call.js';

export const nodeKinds: ReadonlyMap<string, NodeKind> = new Map([start, end, condition, script, foreach, workflowCall, toolCall, agentRun, approval].map((k) => [k.uses, k]));

/** The definitions a plan pins (their hash is the node definition set's hash). */
export const nodeDefinitions: ReadonlyMap<string, NodeDefinition> = nodeKinds;

/** The kind of a node the compiler accepted. A `uses` it does not know is a programmer error. */
export function kindOf(uses: string): NodeKind {
  const kind = nodeKinds.get(uses);
  if (!kind) throw new EngineError('engine.unknown-node-kind', `no node kind ${JSON.stringify(uses)}; a validated plan has none`);
  return kind;
}

/** The capability string a node's configuration implies, e.g. `tool:search`. */
export function impliedCapability(uses: string, config: Record<string, Json> | undefined): string | undefined {
  return nodeKinds.get(uses)?.impliedCapability?.(config ?? {});
}

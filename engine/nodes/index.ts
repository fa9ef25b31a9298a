// The node kinds this engine knows, in one table. A kind is one file in this folder that exports
// a `NodeKind`; adding one means adding it here (and its test). The order is the order the
// validator lists the known types in. The table itself is registry.ts's.
import { agentRun } from './agent-run.js';
import { approval } from './approval.js';
import { condition } from './condition.js';
import { end } from './end.js';
import { foreach } from './foreach.js';
import type { NodeDefinition } from './kind.js';
import { impliedCapability, kindOf, nodeKinds, registerKinds } from './registry.js';
import { script } from './script.js';
import { start } from './start.js';
import { toolCall } from './tool-call.js';
import { workflowCall } from './workflow-call.js';

registerKinds([start, end, condition, script, foreach, workflowCall, toolCall, agentRun, approval]);

export { impliedCapability, kindOf, nodeKinds };

/** The definitions a plan pins (their hash is the node definition set's hash). */
export const nodeDefinitions: ReadonlyMap<string, NodeDefinition> = nodeKinds;

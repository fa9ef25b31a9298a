// `workflow.call@1`: runs a pinned revision of another workflow as a child run; the plan pins
// the called template with the caller's.
import { completeCall, startCall } from './call.js';
import type { NodeConfig, NodeKind } from './kind.js';
import { workflowRef } from './schemas.js';

export const workflowConfig = { type: 'object', required: ['workflow'], additionalProperties: false, properties: { workflow: workflowRef } };

export const workflowCall: NodeKind = {
  uses: 'workflow.call@1',
  label: 'workflow call',
  configSchema: workflowConfig,
  capability: 'workflow',
  implementationDigest: 'builtin:workflow.call@1:1',
  impliedCapability: (config) => `workflow:${config.workflow?.id}`,
  calledWorkflows: (config: NodeConfig) => [config.workflow],
  // The child run's id is the invocation id: starting it again finds the same run.
  effect: () => 'idempotent',
  request: (spec, config) => ({ name: `${config.workflow.id}@${config.workflow.revision}`, config: {} }),
  start(a, spec, attempt, timeoutAt) {
    startCall(a, spec, attempt, timeoutAt);
  },
  complete(a, spec, inv, fact) {
    completeCall(a, inv, fact);
  },
};

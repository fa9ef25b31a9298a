// `tool.call@1`: one call of a named tool through the gateway.
import { startCall, completeCall, withSecretRefs } from './call.js';
import type { NodeKind } from './kind.js';
import { capabilityName, secretRefs } from './schemas.js';

export const toolConfig = { type: 'object', required: ['tool'], additionalProperties: false, properties: { tool: capabilityName, idempotent: { type: 'boolean' }, ...secretRefs } };

export const toolCall: NodeKind = {
  uses: 'tool.call@1',
  label: 'tool call',
  configSchema: toolConfig,
  capability: 'tool',
  implementationDigest: 'builtin:tool.call@1:1',
  impliedCapability: (config) => `tool:${config.tool}`,
  // Only the template's author can say a tool may run twice with the same effect.
  effect: (config) => (config.idempotent === true ? 'idempotent' : 'unknown'),
  request: (spec, config) => ({ name: config.tool, config: withSecretRefs(config) }),
  start(a, spec, attempt, timeoutAt) {
    startCall(a, spec, attempt, timeoutAt);
  },
  complete(a, spec, inv, fact) {
    completeCall(a, inv, fact);
  },
};

// `agent.run@1`: one run of a named agent through the gateway; its answer may have to match an
// `outputSchema`, and an answer that does not may be right on another attempt.
import type { Json } from '../json.js';
import { completeCall, startCall, withSecretRefs } from './call.js';
import type { NodeKind } from './kind.js';
import { capabilityName, secretRefs } from './schemas.js';

export const agentConfig = {
  type: 'object',
  required: ['agent'],
  additionalProperties: false,
  properties: { agent: capabilityName, instructions: { type: 'string', maxLength: 100_000 }, outputSchema: { type: ['object', 'boolean'] }, ...secretRefs },
};

export const agentRun: NodeKind = {
  uses: 'agent.run@1',
  label: 'agent run',
  configSchema: agentConfig,
  capability: 'agent',
  implementationDigest: 'builtin:agent.run@1:1',
  invalidOutputRetryable: true,
  impliedCapability: (config) => `agent:${config.agent}`,
  request(spec, config) {
    const extra: Record<string, Json> = {};
    if (config.instructions !== undefined) extra.instructions = config.instructions;
    if (config.outputSchema !== undefined) extra.outputSchema = config.outputSchema;
    return { name: config.agent, config: withSecretRefs(config, extra) };
  },
  start(a, spec, attempt, timeoutAt) {
    startCall(a, spec, attempt, timeoutAt);
  },
  complete(a, spec, inv, fact) {
    completeCall(a, inv, fact, (spec.config as Record<string, any> | undefined)?.outputSchema);
  },
};

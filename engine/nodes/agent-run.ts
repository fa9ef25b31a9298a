// `agent.run@1`. With an `agent`: one run of a function the host registered, through the gateway;
// its answer may have to match an `outputSchema`, and an answer that does not may be right on
// another attempt. With a `model`: the agent loop in the engine (nodes/agent/loop.ts), each model
// turn and each tool call an invocation of its own.
import type { Json } from '../json.js';
import { isLoop, agentRunConfig, validateAgentConfig } from './agent/config.js';
import { completeLoopCall, reissueLoopCall, resolveLoopCall, startLoop } from './agent/loop.js';
import { completeCall, startCall, withSecretRefs } from './call.js';
import type { NodeKind } from './kind.js';

export { opaqueAgentConfig as agentConfig } from './agent/config.js';

export const agentRun: NodeKind = {
  uses: 'agent.run@1',
  label: 'agent run',
  configSchema: agentRunConfig,
  capability: 'agent',
  implementationDigest: 'builtin:agent.run@1:2',
  invalidOutputRetryable: true,
  impliedCapability: (config) => (isLoop(config) ? `model:${config.model}` : `agent:${config.agent}`),
  validate: validateAgentConfig,
  request(spec, config) {
    const extra: Record<string, Json> = {};
    if (config.instructions !== undefined) extra.instructions = config.instructions;
    if (config.outputSchema !== undefined) extra.outputSchema = config.outputSchema;
    return { name: config.agent, config: withSecretRefs(config, extra) };
  },
  start(a, spec, attempt, timeoutAt) {
    if (isLoop(spec.config ?? {})) startLoop(a, spec, attempt, timeoutAt);
    else startCall(a, spec, attempt, timeoutAt);
  },
  complete(a, spec, inv, fact) {
    const config = (spec.config ?? {}) as Record<string, any>;
    if (isLoop(config)) completeLoopCall(a, spec, inv, fact);
    else completeCall(a, inv, fact, config.outputSchema);
  },
  reissue(a, spec, inv) {
    if (isLoop(spec.config ?? {})) reissueLoopCall(a, spec, inv);
    else return false;
    return true;
  },
  resolve: (a, spec, resolution, output, failure) => isLoop(spec.config ?? {}) && resolveLoopCall(a, spec, resolution, output, failure),
};

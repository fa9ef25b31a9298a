// The configuration of `agent.run@1`. Two forms: the opaque agent (`agent`: one call of a
// function the host registered, as before) and the agent loop (`model`: the engine drives the
// turns, docs/agents.md). The allow-lists of the loop (`tools`, `skills`) name capabilities
// that must also be in the template's `requires`; the authority is checked at every call.
import { limits } from '../../limits.js';
import type { NodeSpec } from '../../protocol/template.js';
import { capabilityCovers } from '../call.js';
import type { NodeCheck, NodeConfig } from '../kind.js';
import { capabilityName, secretRefs } from '../schemas.js';

const instructions = { type: 'string', maxLength: 100_000 };
const outputSchema = { type: ['object', 'boolean'] };

/** The opaque agent's config, unchanged (a foreach's body still takes only this form). */
export const opaqueAgentConfig = {
  type: 'object',
  required: ['agent'],
  additionalProperties: false,
  properties: { agent: capabilityName, instructions, outputSchema, ...secretRefs },
};

const allowList = { type: 'array', items: capabilityName, uniqueItems: true, maxItems: limits.agentAllowListEntriesMax };

export const agentRunConfig = {
  type: 'object',
  additionalProperties: false,
  properties: {
    agent: capabilityName,
    model: capabilityName,
    instructions,
    outputSchema,
    tools: allowList,
    skills: allowList,
    maxTurns: { type: 'integer', minimum: 1, maximum: limits.agentTurnsMax },
    maxTokens: { type: 'integer', minimum: 1 },
    ...secretRefs,
  },
};

/** Whether a node's config asks for the loop in the engine (`model`) rather than the opaque agent. */
export const isLoop = (config: NodeConfig): boolean => config.model !== undefined;

const loopOnly = ['tools', 'skills', 'maxTurns', 'maxTokens'] as const;

/**
 * Exactly one of `agent` and `model`; the loop's members only with `model`; every `tools` and
 * `skills` entry in the template's `requires` (and in the node's own `requires` when it has one),
 * each refusal at the entry's JSON pointer.
 */
export function validateAgentConfig(node: NodeSpec, { at, config, add, allowed }: NodeCheck): void {
  if (config.agent === undefined && config.model === undefined) {
    add('node.config-invalid', `${at}/config`, 'an agent run names an "agent" (a function the host registered) or a "model" (the engine runs the loop)');
    return;
  }
  if (config.agent !== undefined && config.model !== undefined) {
    add('node.config-invalid', `${at}/config/agent`, 'an agent run names an "agent" or a "model", not both');
    return;
  }
  if (!isLoop(config)) {
    for (const key of loopOnly) if (config[key] !== undefined) add('node.config-invalid', `${at}/config/${key}`, `"${key}" needs a "model": an opaque agent runs its own loop`);
    return;
  }
  const check = (list: unknown, member: string, prefix: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((name, j) => {
      if (typeof name !== 'string') return;
      const capability = `${prefix}:${name}`;
      const pointer = `${at}/config/${member}/${j}`;
      if (!allowed.some((p) => capabilityCovers(p, capability))) add('requires.missing', pointer, `node ${JSON.stringify(node.id)} allows ${capability}; add it to /spec/requires`);
      else if (node.requires !== undefined && !node.requires.some((p) => capabilityCovers(p, capability))) add('requires.missing', pointer, `node ${JSON.stringify(node.id)} allows ${capability}, which its own requires does not declare`);
    });
  };
  check(config.tools, 'tools', 'tool');
  check(config.skills, 'skills', 'skill');
}

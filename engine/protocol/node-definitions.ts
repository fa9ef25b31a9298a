// The standard node definitions. Each entry names the schema of its `config`, the capability it
// needs (if any) and how its effect is classified for recovery. `implementationDigest` changes
// whenever the behaviour of a definition changes, so a pinned plan can tell.
import type { Json } from '../json.js';

export type CapabilityKind = 'tool' | 'agent' | 'approval' | 'workflow';

export interface NodeDefinition {
  uses: string;
  configSchema: Json;
  /** The capability a node of this type asks the host for, if any. */
  capability?: CapabilityKind;
  implementationDigest: string;
}

const portableId = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,35}$' };
const capabilityName = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$' };

export const conditionOperators = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'not-in', 'contains', 'exists', 'not-exists', 'truthy', 'falsy'] as const;

const workflowRef = {
  type: 'object',
  required: ['id', 'revision'],
  additionalProperties: false,
  properties: { id: portableId, revision: { type: 'integer', minimum: 1 } },
};

const scriptConfig = {
  type: 'object',
  required: ['source'],
  additionalProperties: false,
  properties: {
    source: { type: 'string', minLength: 1, maxLength: 65_536 },
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: { fuel: { type: 'integer', minimum: 1, maximum: 100_000 }, memoryBytes: { type: 'integer', minimum: 1_048_576, maximum: 268_435_456 } },
    },
  },
};

// Secrets never appear in a template: a node names an opaque reference that the gateway resolves
// at call time.
const secretRefs = { credentialRef: portableId, connectionRef: portableId };
const toolConfig = { type: 'object', required: ['tool'], additionalProperties: false, properties: { tool: capabilityName, idempotent: { type: 'boolean' }, ...secretRefs } };
const agentConfig = {
  type: 'object',
  required: ['agent'],
  additionalProperties: false,
  properties: { agent: capabilityName, instructions: { type: 'string', maxLength: 100_000 }, outputSchema: { type: ['object', 'boolean'] }, ...secretRefs },
};
const workflowConfig = { type: 'object', required: ['workflow'], additionalProperties: false, properties: { workflow: workflowRef } };


const definitions: NodeDefinition[] = [
  { uses: 'core.start@1', configSchema: { type: 'object', additionalProperties: false }, implementationDigest: 'builtin:core.start@1:1' },
  { uses: 'core.end@1', configSchema: { type: 'object', additionalProperties: false }, implementationDigest: 'builtin:core.end@1:1' },
  {
    uses: 'core.condition@1',
    configSchema: { type: 'object', required: ['operator'], additionalProperties: false, properties: { operator: { enum: [...conditionOperators] } } },
    implementationDigest: 'builtin:core.condition@1:1',
  },
  { uses: 'core.script@1', configSchema: scriptConfig, implementationDigest: 'builtin:core.script@1:1' },
  {
    uses: 'core.foreach@1',
    configSchema: {
      type: 'object',
      required: ['body'],
      additionalProperties: false,
      properties: {
        maxItems: { type: 'integer', minimum: 1, maximum: 100_000 },
        maxConcurrency: { type: 'integer', minimum: 1, maximum: 256 },
        failurePolicy: { enum: ['fail-fast', 'continue'] },
        body: {
          oneOf: [
            { type: 'object', required: ['uses', 'config'], additionalProperties: false, properties: { uses: { const: 'tool.call@1' }, config: toolConfig } },
            { type: 'object', required: ['uses', 'config'], additionalProperties: false, properties: { uses: { const: 'agent.run@1' }, config: agentConfig } },
            { type: 'object', required: ['uses', 'config'], additionalProperties: false, properties: { uses: { const: 'workflow.call@1' }, config: workflowConfig } },
            { type: 'object', required: ['uses', 'config'], additionalProperties: false, properties: { uses: { const: 'core.script@1' }, config: scriptConfig } },
          ],
        },
      },
    },
    implementationDigest: 'builtin:core.foreach@1:1',
  },
  { uses: 'workflow.call@1', configSchema: workflowConfig, capability: 'workflow', implementationDigest: 'builtin:workflow.call@1:1' },
  { uses: 'tool.call@1', configSchema: toolConfig, capability: 'tool', implementationDigest: 'builtin:tool.call@1:1' },
  { uses: 'agent.run@1', configSchema: agentConfig, capability: 'agent', implementationDigest: 'builtin:agent.run@1:1' },
  {
    uses: 'human.approval@1',
    configSchema: {
      type: 'object',
      additionalProperties: false,
      properties: { prompt: { type: 'string', maxLength: 10_000 }, approvers: { type: 'array', items: { type: 'string' } }, onReject: { enum: ['fail', 'continue'] } },
    },
    capability: 'approval',
    implementationDigest: 'builtin:human.approval@1:1',
  },
];

export const nodeDefinitions: ReadonlyMap<string, NodeDefinition> = new Map(definitions.map((d) => [d.uses, d]));

/** The capability string a node's configuration implies, e.g. `tool:search`. */
export function impliedCapability(uses: string, config: Record<string, Json> | undefined): string | undefined {
  const c = (config ?? {}) as Record<string, any>;
  switch (uses) {
    case 'tool.call@1':
      return `tool:${c.tool}`;
    case 'agent.run@1':
      return `agent:${c.agent}`;
    case 'human.approval@1':
      return 'approval';
    case 'workflow.call@1':
      return `workflow:${c.workflow?.id}`;
    case 'core.foreach@1':
      return c.body ? impliedCapability(c.body.uses, c.body.config) : undefined;
    default:
      return undefined;
  }
}

/** Does a granted capability pattern (`tool:*`, `*`, `tool:search`) cover a capability? */
export function capabilityCovers(pattern: string, capability: string): boolean {
  if (pattern === '*' || pattern === capability) return true;
  return pattern.endsWith(':*') && capability.startsWith(pattern.slice(0, -1));
}

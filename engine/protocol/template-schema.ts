// The structural JSON Schema of a WorkflowTemplate. Semantic rules (graph, bindings, node
// configuration, capabilities) are checked by the compiler after this passes.
import { portableIdSource } from './ids.js';

const id = { type: 'string', pattern: `^${portableIdSource}$` };

// A binding's kind is its `source`: the validator checks only the branch that names it
// (ajv's `discriminator`, on the template's own ajv instance), instead of trying all three and
// reporting the two that do not apply. Same verdicts; errors that name what is wrong.
const binding = {
  type: 'object',
  required: ['source'],
  discriminator: { propertyName: 'source' },
  oneOf: [
    { type: 'object', required: ['source', 'value'], additionalProperties: false, properties: { source: { const: 'literal' }, value: {} } },
    { type: 'object', required: ['source', 'path'], additionalProperties: false, properties: { source: { const: 'input' }, path: { type: 'string' } } },
    {
      type: 'object',
      required: ['source', 'nodeId'],
      additionalProperties: false,
      properties: { source: { const: 'output' }, nodeId: id, path: { type: 'string' } },
    },
  ],
};

export const templateSchema = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  additionalProperties: false,
  properties: {
    apiVersion: { type: 'string' },
    kind: { const: 'WorkflowTemplate' },
    metadata: {
      type: 'object',
      required: ['id'],
      additionalProperties: false,
      properties: {
        id,
        name: { type: 'string', maxLength: 200 },
        description: { type: 'string', maxLength: 4000 },
        labels: { type: 'object', additionalProperties: { type: 'string', maxLength: 200 } },
        authority: { type: 'string', maxLength: 200 },
      },
    },
    spec: {
      type: 'object',
      required: ['nodes', 'edges'],
      additionalProperties: false,
      properties: {
        inputSchema: { type: ['object', 'boolean'] },
        outputSchema: { type: ['object', 'boolean'] },
        requires: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 }, uniqueItems: true },
        nodes: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            required: ['id', 'uses'],
            additionalProperties: false,
            properties: {
              id,
              uses: { type: 'string', pattern: '^[a-z][a-z0-9.-]*@[0-9]+$' },
              name: { type: 'string', maxLength: 200 },
              inputs: { type: 'object', additionalProperties: binding },
              config: { type: 'object' },
              expects: { type: ['object', 'boolean'] },
              requires: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 }, uniqueItems: true },
              retry: {
                type: 'object',
                required: ['maxAttempts'],
                additionalProperties: false,
                properties: {
                  maxAttempts: { type: 'integer', minimum: 1, maximum: 20 },
                  backoffMs: { type: 'integer', minimum: 0, maximum: 86_400_000 },
                  backoffMultiplier: { type: 'number', minimum: 1, maximum: 10 },
                  retryOn: { type: 'array', items: { type: 'string' } },
                },
              },
              timeoutMs: { type: 'integer', minimum: 1, maximum: 2_678_400_000 },
              readOnly: { type: 'boolean' },
            },
          },
        },
        edges: {
          type: 'array',
          items: {
            type: 'object',
            required: ['from', 'to'],
            additionalProperties: false,
            properties: { from: id, to: id, port: { type: 'string' } },
          },
        },
        outputs: { type: 'object', additionalProperties: binding },
        policies: {
          type: 'object',
          additionalProperties: false,
          properties: { timeoutMs: { type: 'integer', minimum: 1, maximum: 2_678_400_000 }, capture: { enum: ['metadata', 'standard', 'replayable'] } },
        },
      },
    },
    layout: {},
  },
} as const;

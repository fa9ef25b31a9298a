// `core.condition@1`: compares its inputs with a fixed operator; the result picks the port
// (`true` or `false`) its outgoing edges leave by.
import { evaluateCondition, resolveBinding } from '../runtime/bindings.js';
import type { NodeKind } from './kind.js';

export const conditionOperators = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'not-in', 'contains', 'exists', 'not-exists', 'truthy', 'falsy'] as const;
const binaryOperators = new Set(['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'not-in', 'contains']);

export const condition: NodeKind = {
  uses: 'core.condition@1',
  label: 'condition',
  configSchema: { type: 'object', required: ['operator'], additionalProperties: false, properties: { operator: { enum: [...conditionOperators] } } },
  implementationDigest: 'builtin:core.condition@1:1',
  ports: ['true', 'false'],
  portOf: (output) => String((output as { result: boolean }).result),
  // It may test whether a path exists (`exists`, `not-exists`): its operands may be absent.
  inputsMayBeAbsent: true,
  validate(node, { at, config, inputs, add }) {
    if (!('left' in inputs)) add('node.inputs-missing', `${at}/inputs`, 'a condition needs an input named "left"');
    if (binaryOperators.has(config.operator) && !('right' in inputs)) add('node.inputs-missing', `${at}/inputs`, `operator ${JSON.stringify(config.operator)} needs an input named "right"`);
  },
  start(a, spec, attempt) {
    a.emit('node.started', {}, { id: spec.id, attempt });
    const config = (spec.config ?? {}) as Record<string, any>;
    const left = spec.inputs?.left ? resolveBinding(spec.inputs.left, a.run) : undefined;
    const right = spec.inputs?.right ? resolveBinding(spec.inputs.right, a.run) : undefined;
    a.settle.commitOutput(a, spec.id, { result: evaluateCondition(config.operator, left, right) });
  },
};

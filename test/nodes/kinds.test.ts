// The node kind table, read from the engine's sources (no component): every kind is complete
// for what it declares, and the definition set that plans pin has not changed by accident.
import { describe, expect, it } from 'vitest';
import { nodeDefinitionSetHash } from '../../engine/compiler/plan.js';
import { validateTemplate } from '../../engine/compiler/validate.js';
import { impliedCapability, kindOf, nodeKinds } from '../../engine/nodes/index.js';

const noSyntaxErrors = () => undefined;

function template(nodes: unknown[], edges: unknown[], requires: string[] = []) {
  return { apiVersion: 'workflow.gm-hz.dev/v1alpha1', kind: 'WorkflowTemplate', metadata: { id: 'kinds' }, spec: { requires, nodes, edges } };
}

describe('node kinds', () => {
  it('lists the kinds in the order the validator names them', () => {
    expect([...nodeKinds.keys()]).toEqual([
      'core.start@1',
      'core.end@1',
      'core.condition@1',
      'core.script@1',
      'core.foreach@1',
      'workflow.call@1',
      'tool.call@1',
      'agent.run@1',
      'human.approval@1',
    ]);
  });

  it('keeps the node definition set that recorded runs pinned', () => {
    // Changing a kind's schema or implementation digest changes this hash on purpose only
    // (last: core.foreach@1's body may be of a host node type).
    expect(nodeDefinitionSetHash()).toBe('sha256:c517474d9902cacce012fdd4ff6fa7dc2c5ecccfc7d33e3ed50646265092c3fe');
  });

  it('keeps a foreach body of a host type from naming any of the engine\'s types', () => {
    const body = (nodeKinds.get('core.foreach@1')!.configSchema as any).properties.body.oneOf;
    expect(body[body.length - 1].properties.uses.not.enum).toEqual([...nodeKinds.keys()]);
  });

  it('gives every kind that calls the gateway a request, a completion and a capability', () => {
    for (const kind of nodeKinds.values()) {
      expect(kind.start, kind.uses).toBeTypeOf('function');
      if (kind.capability === undefined) continue;
      expect(kind.request, kind.uses).toBeTypeOf('function');
      expect(kind.complete, kind.uses).toBeTypeOf('function');
      expect(kind.impliedCapability, kind.uses).toBeTypeOf('function');
    }
    expect([...nodeKinds.values()].filter((k) => k.role === 'start').map((k) => k.uses)).toEqual(['core.start@1']);
  });

  it('answers the capability, effect, request and port of a kind', () => {
    expect(impliedCapability('tool.call@1', { tool: 'search' })).toBe('tool:search');
    expect(impliedCapability('core.foreach@1', { body: { uses: 'agent.run@1', config: { agent: 'writer' } } })).toBe('agent:writer');
    expect(impliedCapability('core.script@1', { source: 'return 1' })).toBeUndefined();
    expect(kindOf('tool.call@1').effect!({ tool: 'x', idempotent: true })).toBe('idempotent');
    expect(kindOf('tool.call@1').effect!({ tool: 'x' })).toBe('unknown');
    expect(kindOf('human.approval@1').request!({ id: 'ok', uses: 'human.approval@1' }, { prompt: 'ship?' })).toEqual({ name: 'ok', config: { prompt: 'ship?' } });
    expect(kindOf('core.condition@1').portOf!({ result: false })).toBe('false');
    expect(() => kindOf('nope@1')).toThrow(/no node kind/);
  });

  it('validates through the kinds: ports, required inputs, start without inputs', () => {
    const errors = validateTemplate(
      template(
        [
          { id: 's', uses: 'core.start@1', inputs: { x: { source: 'literal', value: 1 } } },
          { id: 'c', uses: 'core.condition@1', config: { operator: 'eq' }, inputs: { left: { source: 'input', path: '/a' } } },
          { id: 'f', uses: 'core.foreach@1', config: { body: { uses: 'core.script@1', config: { source: 'return 1' } } } },
          { id: 'e', uses: 'core.end@1' },
        ],
        [
          { from: 's', to: 'c' },
          { from: 'c', to: 'f' },
          { from: 'f', to: 'e', port: 'true' },
        ],
      ),
      noSyntaxErrors,
    );
    expect(errors.map((e) => [e.code, e.pointer, e.message])).toEqual([
      ['edge.port-required', '/spec/edges/1/port', 'an edge leaving condition "c" needs port "true" or "false"'],
      ['edge.port-invalid', '/spec/edges/2/port', 'node "f" (core.foreach@1) has no port "true"'],
      ['node.inputs-unexpected', '/spec/nodes/0/inputs', 'core.start@1 takes the run input; it has no inputs'],
      ['node.inputs-missing', '/spec/nodes/1/inputs', 'operator "eq" needs an input named "right"'],
      ['node.inputs-missing', '/spec/nodes/2/inputs', 'a foreach needs an input named "items" (an array)'],
    ]);
  });
});

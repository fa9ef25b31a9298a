// Host node definitions as the engine reads them (its sources, no component): the checks on a
// request's definitions, the kind a pinned definition becomes, and how a run finds its kinds
// through its plan.
import { describe, expect, it } from 'vitest';
import { validateTemplate } from '../../engine/compiler/validate.js';
import { hostDefinitions, kindsOfPlan } from '../../engine/nodes/custom.js';
import { nodeCapability } from '../../engine/protocol/authority.js';
import { kindOf } from '../../engine/nodes/index.js';

const noSyntaxErrors = () => undefined;

function template(uses: string, config: unknown = {}, requires: string[] = ['node:*']) {
  return {
    apiVersion: 'workflow.gm-hz.dev/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { id: 'custom' },
    spec: {
      requires,
      nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'n', uses, config }, { id: 'end', uses: 'core.end@1' }],
      edges: [
        { from: 'start', to: 'n' },
        { from: 'n', to: 'end' },
      ],
    },
  };
}

describe('host node definitions', () => {
  it('refuse malformed, duplicate and shadowing definitions, each with its pointer', () => {
    const { errors, kinds } = hostDefinitions([
      { uses: 'acme.ok@1', configSchema: {}, effect: 'read-only', implementationDigest: 'sha256:a' },
      { uses: 'Acme@1', configSchema: {} },
      { uses: 'tool.call@1', configSchema: {} },
      { uses: 'acme.ok@1', configSchema: {} },
      { uses: 'acme.effect@1', configSchema: {}, effect: 'sometimes' },
      { uses: 'acme.schema@1', configSchema: { type: 'no-such-type' } },
    ]);
    expect(errors.map((e) => `${e.code} ${e.pointer}`)).toEqual([
      'node.definition-invalid /nodeDefinitions/1/uses',
      'node.definition-shadows-builtin /nodeDefinitions/2/uses',
      'node.definition-duplicate /nodeDefinitions/3/uses',
      'node.definition-invalid /nodeDefinitions/4',
      'node.definition-invalid /nodeDefinitions/5',
    ]);
    expect([...kinds.keys()]).toEqual(['acme.ok@1']);
    expect(hostDefinitions({}).errors.map((e) => e.code)).toEqual(['node.definition-invalid']);
  });

  it('make kinds that call the gateway once, under node:<name>, with the pinned effect and digest', () => {
    const { kinds } = hostDefinitions([{ uses: 'acme.compensate@1', configSchema: {}, effect: 'idempotent', implementationDigest: 'sha256:c' }]);
    const kind = kinds.get('acme.compensate@1')!;
    expect(nodeCapability('acme.compensate@1')).toBe('node:acme.compensate');
    expect(kind.capability).toBe('node');
    expect(kind.impliedCapability!({})).toBe('node:acme.compensate');
    expect(kind.effect!({})).toBe('idempotent');
    expect(kind.request!({ id: 'n', uses: 'acme.compensate@1' }, { mode: 'refund' })).toEqual({ name: 'acme.compensate@1', config: { mode: 'refund', implementationDigest: 'sha256:c' } });
    // Without an effect a definition's calls are `unknown`.
    expect(hostDefinitions([{ uses: 'acme.x@1', configSchema: {} }]).kinds.get('acme.x@1')!.effect!({})).toBe('unknown');
  });

  it('are known to validation only when the request carries them', () => {
    const { kinds } = hostDefinitions([{ uses: 'acme.compensate@1', configSchema: { type: 'object', additionalProperties: false } }]);
    expect(validateTemplate(template('acme.compensate@1'), noSyntaxErrors, kinds)).toEqual([]);
    const without = validateTemplate(template('acme.compensate@1'), noSyntaxErrors);
    expect(without.map((e) => e.code)).toEqual(['node.unknown-type']);
    expect(without[0].message).toMatch(/known types: core\.start@1, .*human\.approval@1$/);
    const unknown = validateTemplate(template('acme.other@1'), noSyntaxErrors, kinds);
    expect(unknown[0].message).toMatch(/known types: core\.start@1, .*human\.approval@1, acme\.compensate@1$/);
    expect(validateTemplate(template('acme.compensate@1', { extra: 1 }), noSyntaxErrors, kinds)).toEqual([{ code: 'node.config-invalid', pointer: '/spec/nodes/1/config', message: 'has unknown property "extra"' }]);
    expect(validateTemplate(template('acme.compensate@1', {}, ['node:acme.other']), noSyntaxErrors, kinds).map((e) => e.code)).toEqual(['requires.missing']);
  });

  it('are found by a run through its plan: built-in kinds, then the pinned ones, built once per plan', () => {
    const plan = { nodeDefinitions: { 'acme.compensate@1': { configSchema: {}, effect: 'read-only' as const, implementationDigest: null } } };
    const lookup = kindsOfPlan(plan);
    expect(kindsOfPlan(plan)).toBe(lookup);
    expect(lookup('tool.call@1')).toBe(kindOf('tool.call@1'));
    expect(lookup('acme.compensate@1').effect!({})).toBe('read-only');
    expect(() => lookup('acme.other@1')).toThrow(/no node kind "acme.other@1"/);
    // A plan without host definitions reads the built-in table only.
    expect(() => kindsOfPlan({})('acme.compensate@1')).toThrow(/no node kind/);
  });
});

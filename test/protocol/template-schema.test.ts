// The template schema checks a binding against the branch its `source` names (ajv's
// `discriminator`), so an invalid binding gets the errors that apply to it; the schemas a template
// carries are compiled by another ajv instance, where `discriminator` stays an unknown keyword.
import { describe, expect, it } from 'vitest';
import { validateTemplate } from '../../engine/compiler/validate.js';
import { bind, node, template as build } from './builders.js';

const noSyntaxErrors = () => undefined;

/** start -> a (a tool call with these inputs) -> end. */
const template = (inputs: Record<string, unknown>, expects?: unknown) =>
  build('bindings', [node.start(), node.tool('a', 't', { inputs, ...(expects !== undefined ? { expects } : {}) }), node.end()]);

const schemaErrors = (inputs: Record<string, unknown>) => validateTemplate(template(inputs), noSyntaxErrors).filter((e) => e.code === 'template.schema');

describe('template schema: bindings', () => {
  it('accepts each kind of binding', () => {
    expect(validateTemplate(template({ l: bind.literal(null), i: bind.input('/q'), o: bind.output('start', '/x') }), noSyntaxErrors)).toEqual([]);
  });

  it('names what is wrong with a binding, once', () => {
    expect(schemaErrors({ x: { source: 'output' } })).toEqual([{ code: 'template.schema', pointer: '/spec/nodes/1/inputs/x', message: "must have required property 'nodeId'" }]);
    expect(schemaErrors({ x: { source: 'input', path: '/a', extra: 1 } })).toEqual([{ code: 'template.schema', pointer: '/spec/nodes/1/inputs/x', message: 'has unknown property "extra"' }]);
    expect(schemaErrors({ x: { source: 'nope' } })).toEqual([{ code: 'template.schema', pointer: '/spec/nodes/1/inputs/x', message: 'value of tag "source" must be in oneOf, got "nope"' }]);
    expect(schemaErrors({ x: 5 })).toEqual([{ code: 'template.schema', pointer: '/spec/nodes/1/inputs/x', message: 'must be object' }]);
    expect(schemaErrors({ x: {} }).map((e) => e.message)).toContain("must have required property 'source'");
  });

  it('leaves `discriminator` in a schema the template carries to that schema', () => {
    // An OpenAPI-style discriminator with a mapping, which ajv's discriminator support refuses: the
    // node's `expects` schema must still compile as before (the keyword ignored).
    const expects = { type: 'object', discriminator: { propertyName: 'kind', mapping: { a: '#/definitions/A' } }, oneOf: [{ properties: { kind: { const: 'a' } } }] };
    expect(validateTemplate(template({}, expects), noSyntaxErrors)).toEqual([]);
  });
});

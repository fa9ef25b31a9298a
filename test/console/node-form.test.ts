// The node form's edits of the template text: one value's bytes replaced, every other byte kept,
// whatever the layout; a config member that is not there yet is added to the node.
import { describe, expect, it } from 'vitest';
import { setConfigValue, valueSpans } from '../../hosts/console/node-form.js';

const text = `{ "spec": {"nodes": [
    {"id": "start", "uses": "core.start@1"},
    { "id":"say" , "uses":"tool.call@1", "config": { "tool" : "ec\\"ho",  "a/b": [1, {"x": null}] } },
    {"id": "end", "uses": "core.end@1"}
  ] } }`;

describe('node form edits', () => {
  it('finds each value by its pointer', () => {
    const spans = valueSpans(text);
    const at = (p: string) => text.slice(...spans.get(p)!);
    expect(at('/spec/nodes/1/config/tool')).toBe('"ec\\"ho"');
    expect(at('/spec/nodes/1/config/a~1b/1/x')).toBe('null');
    expect(at('/spec/nodes/2/id')).toBe('"end"');
    expect(JSON.parse(at('/spec/nodes/1'))).toEqual(JSON.parse(text).spec.nodes[1]);
  });

  it('replaces one value and keeps every other byte', () => {
    const edited = setConfigValue(text, 1, 'tool', 'echo');
    expect(edited).toBe(text.replace('"ec\\"ho"', '"echo"'));
  });

  it('adds a member to a config, and a config to a node without one', () => {
    const added = setConfigValue(text, 1, 'retries', 2);
    expect(JSON.parse(added).spec.nodes[1].config).toEqual({ tool: 'ec"ho', 'a/b': [1, { x: null }], retries: 2 });
    expect(added.slice(added.indexOf('{"id": "end"'))).toBe(text.slice(text.indexOf('{"id": "end"')));
    const configured = setConfigValue(text, 0, 'note', 'hi');
    expect(JSON.parse(configured).spec.nodes[0]).toEqual({ id: 'start', uses: 'core.start@1', config: { note: 'hi' } });
    expect(configured.replace(', "config": {"note":"hi"}', '')).toBe(text);
  });
});

// Validation of `agent.run@1`'s config: the loop's allow-lists (`tools`, `skills`) each in
// `spec.requires`, refused at the entry's JSON pointer; the opaque agent's config unchanged.
import { describe, expect, it } from 'vitest';
import { validationErrors, type Obj } from '../protocol/harness.js';
import { agentTemplate } from './agent-builders.js';

const withRequires = (requires: string[], config: Obj = {}, extra: Obj = {}) => {
  const t = agentTemplate(config, extra) as { spec: Obj };
  t.spec.requires = requires;
  return t;
};

describe('agent.run@1 config', () => {
  it('accepts model, instructions, tools, skills, maxTurns, maxTokens and outputSchema', () => {
    expect(validationErrors(withRequires(['model:fake', 'tool:search', 'tool:charge', 'skill:tone'], { skills: ['tone'], maxTokens: 5000, outputSchema: { type: 'object' } }))).toEqual([]);
  });

  it('refuses each tool and skill missing from spec.requires, at its pointer', () => {
    expect(validationErrors(withRequires(['model:fake', 'tool:search'], { skills: ['tone'] }))).toEqual([
      { code: 'requires.missing', pointer: '/spec/nodes/1/config/tools/1', message: 'node "ag" allows tool:charge; add it to /spec/requires' },
      { code: 'requires.missing', pointer: '/spec/nodes/1/config/skills/0', message: 'node "ag" allows skill:tone; add it to /spec/requires' },
    ]);
  });

  it('a pattern in spec.requires covers the entries; the node\'s own requires must declare them too', () => {
    expect(validationErrors(withRequires(['model:*', 'tool:*']))).toEqual([]);
    expect(validationErrors(withRequires(['model:*', 'tool:*'], {}, { requires: ['model:fake', 'tool:search'] }))).toEqual([
      { code: 'requires.missing', pointer: '/spec/nodes/1/config/tools/1', message: 'node "ag" allows tool:charge, which its own requires does not declare' },
    ]);
  });

  it('the model itself must be in spec.requires', () => {
    expect(validationErrors(withRequires(['tool:search', 'tool:charge']))).toEqual([
      { code: 'requires.missing', pointer: '/spec/nodes/1/uses', message: 'node "ag" needs capability "model:fake"; add it to /spec/requires' },
    ]);
  });

  it('refuses an agent with neither agent nor model, with both, and the loop\'s members without a model', () => {
    const none = withRequires(['tool:search', 'tool:charge'], { model: undefined });
    expect(validationErrors(none)).toEqual([{ code: 'node.config-invalid', pointer: '/spec/nodes/1/config', message: 'an agent run names an "agent" (a function the host registered) or a "model" (the engine runs the loop)' }]);
    expect(validationErrors(withRequires(['model:fake', 'agent:a', 'tool:search', 'tool:charge'], { agent: 'a' }))).toEqual([
      { code: 'node.config-invalid', pointer: '/spec/nodes/1/config/agent', message: 'an agent run names an "agent" or a "model", not both' },
    ]);
    expect(validationErrors(withRequires(['agent:a'], { model: undefined, agent: 'a', tools: undefined, maxTurns: 3 }))).toEqual([
      { code: 'node.config-invalid', pointer: '/spec/nodes/1/config/maxTurns', message: '"maxTurns" needs a "model": an opaque agent runs its own loop' },
    ]);
  });

  it('bounds maxTurns and refuses unknown members', () => {
    const errors = validationErrors(withRequires(['model:fake', 'tool:search', 'tool:charge'], { maxTurns: 201, temperature: 1 }));
    expect(errors.map((e) => `${e.code} ${e.pointer}`)).toEqual(['node.config-invalid /spec/nodes/1/config', 'node.config-invalid /spec/nodes/1/config/maxTurns']);
  });
});

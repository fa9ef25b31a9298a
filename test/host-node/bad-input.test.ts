// Bad input gets a clear, typed error and loses nothing.
import { describe, expect, it } from 'vitest';
import { api, chain, openRuntime } from '../helpers/node-host.js';

describe('template validation', () => {
  it('reports every error with a stable code and a JSON pointer', async () => {
    const rt = await openRuntime();
    try {
      const report = await rt.validate({
        apiVersion: api,
        kind: 'WorkflowTemplate',
        metadata: { id: 'broken' },
        spec: {
          requires: [],
          nodes: [
            { id: 'start', uses: 'core.start@1' },
            { id: 'a', uses: 'tool.call@1', config: { tool: 'search' }, inputs: { q: { source: 'output', nodeId: 'b' } } },
            { id: 'b', uses: 'core.script@1', config: { source: 'return (' } },
            { id: 'b', uses: 'core.magic@1' },
            { id: 'c', uses: 'core.condition@1', config: { operator: 'eq' } },
            { id: 'end', uses: 'core.end@1' },
          ],
          edges: [
            { from: 'start', to: 'a' },
            { from: 'a', to: 'b' },
            { from: 'b', to: 'a' },
            { from: 'c', to: 'end' },
            { from: 'a', to: 'nowhere' },
          ],
        },
      });
      expect(report.ok).toBe(false);
      const codes = report.errors.map((e) => `${e.code} ${e.pointer}`);
      expect(codes).toEqual(
        expect.arrayContaining([
          'node.duplicate-id /spec/nodes/3/id',
          'node.unknown-type /spec/nodes/3/uses',
          'edge.unknown-node /spec/edges/4/to',
          'graph.cycle /spec/edges',
          'requires.missing /spec/nodes/1/uses',
          'script.syntax /spec/nodes/2/config/source',
          'node.inputs-missing /spec/nodes/4/inputs',
          'edge.port-required /spec/edges/3/port',
          'graph.unreachable /spec/nodes/4',
        ]),
      );
      for (const e of report.errors) expect(e.message.length).toBeGreaterThan(10);
    } finally {
      await rt.close();
    }
  });

  it('a binding without a path, or with a path that is not text, is a typed error, never an engine fault', async () => {
    const rt = await openRuntime();
    try {
      const template = chain(
        'paths',
        [
          { id: 'a', uses: 'tool.call@1', config: { tool: 'echo' }, inputs: { whole: { source: 'input' }, odd: { source: 'input', path: 5 }, out: { source: 'output', nodeId: 'start', path: ['x'] } } },
        ],
        { requires: ['tool:echo'] },
      );
      const report = await rt.validate(template);
      const codes = report.errors.map((e) => `${e.code} ${e.pointer}`);
      expect(codes).toEqual(expect.arrayContaining(['binding.bad-path /spec/nodes/1/inputs/whole', 'binding.bad-path /spec/nodes/1/inputs/odd/path', 'binding.bad-path /spec/nodes/1/inputs/out/path']));
      expect(codes.filter((c) => c.startsWith('engine.'))).toEqual([]);
      await expect(rt.launch(template)).rejects.toMatchObject({ code: 'template.invalid' });
      expect(await rt.listRuns()).toEqual([]);
    } finally {
      await rt.close();
    }
  });

  it('refuses dependencies that are not a list of { template, revision } with compile.bad-dependencies, and writes nothing', async () => {
    const rt = await openRuntime();
    try {
      const template = chain('deps', [{ id: 'a', uses: 'tool.call@1', config: { tool: 'echo' } }], { requires: ['tool:echo'] });
      const cases: [unknown, string][] = [
        [7, '/dependencies'],
        [{}, '/dependencies'],
        ['abc', '/dependencies'],
        [[null], '/dependencies/0'],
        [[{ revision: 1 }], '/dependencies/0'],
        [[{ template, revision: 'x' }], '/dependencies/0/revision'],
        [[{ template, revision: 0 }], '/dependencies/0/revision'],
      ];
      for (const [dependencies, pointer] of cases) {
        await expect(rt.launch({ type: 'inline', template, dependencies } as never), JSON.stringify(dependencies)).rejects.toMatchObject({
          code: 'compile.bad-dependencies',
          detail: { errors: [expect.objectContaining({ code: 'compile.bad-dependencies', pointer })] },
        });
      }
      expect(await rt.listRuns()).toEqual([]);
    } finally {
      await rt.close();
    }
  });

  it('names the legacy protocol and how to convert it', async () => {
    const rt = await openRuntime();
    try {
      const report = await rt.validate({ apiVersion: 'dsh.workflow/v1alpha1', kind: 'WorkflowTemplate', metadata: { id: 'x' }, spec: { nodes: [], edges: [] } });
      expect(report.errors).toEqual([expect.objectContaining({ code: 'template.legacy-api-version', pointer: '/apiVersion' })]);
      expect(report.errors[0].message).toContain('migrate-template');
    } finally {
      await rt.close();
    }
  });

  it('rejects text that is not JSON', async () => {
    const rt = await openRuntime();
    try {
      expect((await rt.validate('{"apiVersion": ')).errors[0].code).toBe('template.bad-json');
    } finally {
      await rt.close();
    }
  });
});

describe('launching with bad input', () => {
  it('refuses an invalid template and writes nothing', async () => {
    const rt = await openRuntime();
    try {
      const bad = chain('bad', [{ id: 'x', uses: 'tool.call@1', config: { tool: 'search' } }]);
      await expect(rt.launch(bad)).rejects.toMatchObject({ code: 'template.invalid', detail: { errors: [expect.objectContaining({ code: 'requires.missing' })] } });
      expect(await rt.listRuns()).toEqual([]);
    } finally {
      await rt.close();
    }
  });

  it('refuses input that fails the input schema, with the pointer, and writes nothing', async () => {
    const rt = await openRuntime();
    try {
      const t = chain('typed', [], { inputSchema: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } } });
      await expect(rt.launch(t, { input: { n: 'seven' } })).rejects.toMatchObject({ code: 'run.input-invalid', message: expect.stringContaining('/n must be integer') });
      expect(await rt.listRuns()).toEqual([]);
      const ok = await rt.launch(t, { input: { n: 7 } });
      expect((await ok.result).status).toBe('completed');
    } finally {
      await rt.close();
    }
  });

  it('refuses a run id that could escape a directory', async () => {
    const rt = await openRuntime();
    try {
      await expect(rt.launch(chain('ok', []), { runId: '../etc/passwd' })).rejects.toMatchObject({ code: 'store.bad-id' });
    } finally {
      await rt.close();
    }
  });
});

describe('scripts that misbehave fail their node, never the host', () => {
  const cases: [string, string, string][] = [
    ['loops forever', 'while (true) {}', 'script.fuel'],
    ['allocates without bound', 'const a = []; while (true) a.push(new Array(100000).fill(1));', 'script.memory'],
    ['recurses without bound', 'const f = (n) => f(n + 1) + 1; return f(0);', 'script.stack'],
    ['returns a function', 'return () => 1', 'script.not-json'],
    ['reads the clock', 'return Date.now()', 'script.forbidden'],
    ['asks for randomness', 'return Math.random()', 'script.forbidden'],
  ];
  it.each(cases)('a script that %s fails with %s', async (_what, source, code) => {
    const rt = await openRuntime();
    try {
      const handle = await rt.launch(chain('s', [{ id: 'bad', uses: 'core.script@1', config: { source } }]));
      const outcome = await handle.result;
      expect(outcome.status).toBe('failed');
      expect((outcome.error?.detail as any).error.code).toBe(code);
      // The host still runs scripts afterwards.
      const next = await rt.launch(chain('t', [{ id: 'fine', uses: 'core.script@1', config: { source: 'return 40 + 2' } }]), {});
      expect((await next.result).status).toBe('completed');
    } finally {
      await rt.close();
    }
  });
});

// A node definition the host registers runs end to end: validated against its config schema and
// capability, published with its digest, pinned by the plan, carried out through the gateway
// (kind `node`) exactly once, replayed without calling anything, and refused by a host whose
// implementation is not the one the run pinned. The oracle of executions is a plain array the
// implementation appends to, outside the store.
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalDigest } from '../../dist/hosts/node/catalog/catalog.js';
import { api, approvalChild, openRuntime, publish, removeTempDirs, tempDir } from './helpers.js';

afterAll(removeTempDirs);

type Call = { input: unknown; config: unknown; runId: string; nodeId: string };

const configSchema = { type: 'object', required: ['mode'], additionalProperties: false, properties: { mode: { enum: ['refund', 'void'] } } };

/** The definition of `acme.compensate@1` at one implementation digest (null: none), recording every call in `calls`. */
function compensate(calls: Call[], implementationDigest: string | null = 'sha256:compensate-1', extra: Record<string, unknown> = {}) {
  return {
    configSchema,
    effect: 'idempotent' as const,
    ...(implementationDigest !== null ? { implementationDigest } : {}),
    outputSchema: { type: 'object', required: ['refunded'] },
    label: 'compensation',
    description: 'refunds a charge',
    execute(input: { amount: number }, context: { config: unknown; runId: string; nodeId: string }) {
      calls.push({ input, config: context.config, runId: context.runId, nodeId: context.nodeId });
      return { refunded: input.amount * 100, mode: (context.config as { mode: string }).mode };
    },
    ...extra,
  };
}

/** start -> compensate (custom) -> end; the end node's output is the custom node's. */
function compensation(id: string, options: { requires?: string[]; config?: unknown } = {}): any {
  return {
    apiVersion: api,
    kind: 'WorkflowTemplate',
    metadata: { id },
    spec: {
      requires: options.requires ?? ['node:acme.compensate'],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'refund', uses: 'acme.compensate@1', config: options.config ?? { mode: 'refund' }, inputs: { amount: { source: 'input', path: '/amount' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'refund' },
        { from: 'refund', to: 'end' },
      ],
      outputs: { refund: { source: 'output', nodeId: 'refund' } },
    },
  };
}

describe('custom node definitions run end to end', () => {
  it('a foreach body of a host type: validated against its definition, pinned, one call per item', async () => {
    const calls: Call[] = [];
    const rt = await openRuntime(tempDir(), { nodes: { 'acme.compensate@1': compensate(calls) } });
    const each = (id: string, body: unknown, requires = ['node:acme.compensate']): any => ({
      apiVersion: api,
      kind: 'WorkflowTemplate',
      metadata: { id },
      spec: {
        requires,
        nodes: [
          { id: 'start', uses: 'core.start@1' },
          { id: 'refunds', uses: 'core.foreach@1', config: { body, maxConcurrency: 2 }, inputs: { items: { source: 'input', path: '/charges' } } },
          { id: 'end', uses: 'core.end@1' },
        ],
        edges: [
          { from: 'start', to: 'refunds' },
          { from: 'refunds', to: 'end' },
        ],
        outputs: { refunds: { source: 'output', nodeId: 'refunds' } },
      },
    });
    try {
      const body = { uses: 'acme.compensate@1', config: { mode: 'void' } };
      const invalid = await rt.validate(each('bad-config', { uses: 'acme.compensate@1', config: { mode: 'burn' } }));
      expect(invalid.errors).toEqual([{ code: 'node.config-invalid', pointer: '/spec/nodes/1/config/body/config/mode', message: expect.stringContaining('refund') }]);
      const missing = await rt.validate(each('no-requires', body, ['tool:x']));
      expect(missing.errors).toEqual([{ code: 'requires.missing', pointer: '/spec/nodes/1/uses', message: 'node "refunds" needs capability "node:acme.compensate"; add it to /spec/requires' }]);
      const unknown = await rt.validate(each('unknown-body', { uses: 'acme.other@1', config: {} }));
      expect(unknown.errors).toEqual([{ code: 'node.unknown-type', pointer: '/spec/nodes/1/config/body/uses', message: 'unknown node type "acme.other@1" for the foreach\'s body' }]);

      const handle = await rt.launch({ type: 'inline', template: each('refund-all', body) }, { input: { charges: [{ amount: 1 }, { amount: 2 }, { amount: 3 }] } });
      const outcome = await handle.result;
      expect(outcome).toMatchObject({ status: 'completed', output: { refunds: { results: [{ refunded: 100 }, { refunded: 200 }, { refunded: 300 }] } } });
      // One execution per item, each with its item and the body's config.
      expect(calls.map((c) => [c.input, c.config]).sort((a: any, b: any) => a[0].amount - b[0].amount)).toEqual([
        [{ amount: 1 }, { mode: 'void' }],
        [{ amount: 2 }, { mode: 'void' }],
        [{ amount: 3 }, { mode: 'void' }],
      ]);
      const exported = await rt.exportRun(handle.runId);
      expect(Object.keys((exported.plan as any).nodeDefinitions)).toEqual(['acme.compensate@1']);
      expect((exported.events as any[]).filter((e) => e.type === 'capability.requested').map((e) => [e.payload.kind, e.payload.name, e.payload.effect])).toEqual([
        ['node', 'acme.compensate@1', 'idempotent'],
        ['node', 'acme.compensate@1', 'idempotent'],
        ['node', 'acme.compensate@1', 'idempotent'],
      ]);
      expect(await rt.replay(handle.runId, { mode: 'recorded' })).toMatchObject({ identical: true });
      expect(calls).toHaveLength(3);
    } finally {
      await rt.close();
    }
  });

  it('validate, publish with a digest, run once through the gateway, replay calling nothing', async () => {
    const calls: Call[] = [];
    const dir = tempDir();
    const rt = await openRuntime(dir, { nodes: { 'acme.compensate@1': compensate(calls) } });
    try {
      expect(await rt.validate(compensation('comp'))).toMatchObject({ ok: true, errors: [] });
      const revision = await publish(rt, compensation('comp'));
      expect(revision).toMatchObject({ id: 'comp', revision: 1 });
      const schema = await rt.catalog.describe('comp', 1, 'schema');
      expect(schema.customNodes).toEqual([{ uses: 'acme.compensate@1', capability: 'node:acme.compensate', effect: 'idempotent', implementationDigest: 'sha256:compensate-1' }]);

      const outcome = await (await rt.launch({ type: 'published', id: 'comp', revision: 1 }, { runId: 'comp-1', input: { amount: 7 } })).result;
      expect(outcome).toMatchObject({ status: 'completed', output: { refund: { refunded: 700, mode: 'refund' } } });
      // Exactly one execution, with the resolved input and the node's config.
      expect(calls).toEqual([{ input: { amount: 7 }, config: { mode: 'refund' }, runId: 'comp-1', nodeId: 'refund' }]);

      // The plan pins the definition, under the host's set hash, and its hash covers it.
      const plan = (await rt.exportRun('comp-1')).plan as any;
      expect(plan.nodeDefinitions).toEqual({
        'acme.compensate@1': { configSchema, effect: 'idempotent', implementationDigest: 'sha256:compensate-1', outputSchema: { type: 'object', required: ['refunded'] }, label: 'compensation' },
      });
      expect(plan.nodeDefinitionSetHash).toBe(rt.nodeDefinitionSetHash());
      expect(plan.replayable).toBe(true);
      const { planHash, ...body } = plan;
      expect(planHash).toBe(canonicalDigest(body));

      // The journal says which call it was.
      const events = (await rt.readEvents('comp-1', { limit: 100 })).events as any[];
      const requested = events.filter((e) => e.type === 'capability.requested');
      expect(requested.map((e) => e.payload)).toEqual([expect.objectContaining({ kind: 'node', name: 'acme.compensate@1', effect: 'idempotent', input: { amount: 7 } })]);

      const replay = await rt.replay('comp-1', { mode: 'recorded' });
      expect(replay).toMatchObject({ identical: true, firstDivergence: null });
      expect(calls).toHaveLength(1);

      // Listed among what an authority may use, under its capability.
      expect(rt.capabilities({ id: 'ops', scopes: ['node:*'] })).toEqual([{ kind: 'node', name: 'acme.compensate@1', capability: 'node:acme.compensate', effect: 'idempotent', description: 'refunds a charge' }]);
      expect(rt.capabilities({ id: 'clerk', scopes: ['tool:*'] }).some((c) => c.kind === 'node')).toBe(false);

      // The console's list of node types shows it with its effect.
      expect(rt.nodeTypes().find((t) => t.uses === 'acme.compensate@1')).toEqual({
        uses: 'acme.compensate@1',
        label: 'compensation',
        capability: 'node',
        configSchema,
        effect: 'idempotent',
        description: 'refunds a charge',
        outputSchema: { type: 'object', required: ['refunded'] },
        implementationDigest: 'sha256:compensate-1',
        custom: true,
      });
    } finally {
      await rt.close();
    }
    // A host without the definition replays the run from its pinned plan alone.
    const bare = await openRuntime(dir);
    try {
      expect(await bare.replay('comp-1', { mode: 'recorded' })).toMatchObject({ identical: true, recordedOutcome: { status: 'completed' } });
    } finally {
      await bare.close();
    }
  });

  it('registered after open through runtime.nodeDefinitions.register, with the same result', async () => {
    const calls: Call[] = [];
    const rt = await openRuntime(tempDir());
    try {
      expect((await rt.validate(compensation('late'))).errors.map((e: any) => e.code)).toEqual(['node.unknown-type']);
      rt.nodeDefinitions.register({ uses: 'acme.compensate@1', ...compensate(calls) });
      expect(await rt.validate(compensation('late'))).toMatchObject({ ok: true });
      const outcome = await (await rt.launch({ type: 'inline', template: compensation('late') }, { runId: 'late-1', input: { amount: 2 } })).result;
      expect(outcome).toMatchObject({ status: 'completed', output: { refund: { refunded: 200 } } });
      expect(calls).toHaveLength(1);
    } finally {
      await rt.close();
    }
  });

  it('config against its schema, the capability in requires, unknown and shadowing types: typed errors', async () => {
    const calls: Call[] = [];
    const rt = await openRuntime(tempDir(), { nodes: { 'acme.compensate@1': compensate(calls) } });
    try {
      const invalid = await rt.validate(compensation('bad-config', { config: { mode: 'steal' } }));
      expect(invalid.errors).toEqual([{ code: 'node.config-invalid', pointer: '/spec/nodes/1/config/mode', message: expect.stringContaining('allowed values') }]);

      const missing = await rt.validate(compensation('no-requires', { requires: ['tool:upper'] }));
      expect(missing.errors).toEqual([{ code: 'requires.missing', pointer: '/spec/nodes/1/uses', message: 'node "refund" needs capability "node:acme.compensate"; add it to /spec/requires' }]);
      // A pattern covers it as it covers any capability.
      expect(await rt.validate(compensation('star', { requires: ['node:*'] }))).toMatchObject({ ok: true });

      const unknown = compensation('unknown');
      unknown.spec.nodes[1].uses = 'acme.compensate@2';
      const report = await rt.validate(unknown);
      expect(report.errors).toEqual([{ code: 'node.unknown-type', pointer: '/spec/nodes/1/uses', message: expect.stringContaining('acme.compensate@1') }]);
      expect(report.errors[0].message).toContain('tool.call@1');

      // Launching an invalid one is refused before anything runs.
      await expect(rt.launch({ type: 'inline', template: compensation('bad-launch', { config: {} }) }, { input: { amount: 1 } })).rejects.toMatchObject({ code: 'template.invalid' });

      // A host definition may not take a built-in type's name: refused when it is registered,
      // and the runtime's validations go on as before.
      expect(() => rt.nodeDefinitions.register({ uses: 'tool.call@1', configSchema: {}, implementationDigest: 'sha256:x' })).toThrow(expect.objectContaining({ code: 'node.definition-shadows-builtin', message: expect.stringContaining('tool.call@1 is built into the engine') }));
      expect(await rt.validate(compensation('after-shadow'))).toMatchObject({ ok: true });
      await expect(openRuntime(tempDir(), { nodes: { 'core.script@1': { configSchema: {}, execute: () => null } } })).rejects.toMatchObject({ code: 'node.definition-shadows-builtin' });
      expect(calls).toEqual([]);
    } finally {
      await rt.close();
    }
  });

  it('an authority without node:acme.compensate: capability.denied, nothing executed', async () => {
    const calls: Call[] = [];
    const rt = await openRuntime(tempDir(), { nodes: { 'acme.compensate@1': compensate(calls) }, authorities: { id: 'clerk', scopes: ['tool:*'] } });
    try {
      const outcome = await (await rt.launch({ type: 'inline', template: compensation('denied') }, { runId: 'denied-1', input: { amount: 3 } })).result;
      expect(outcome.status).toBe('failed');
      expect((outcome.error?.detail as any).error).toMatchObject({ code: 'capability.denied', message: 'authority clerk does not grant node:acme.compensate' });
      expect(calls).toEqual([]);
    } finally {
      await rt.close();
    }
  });

  it('a host with another implementation digest refuses to continue the run and never calls its implementation', async () => {
    const dir = tempDir();
    const first: Call[] = [];
    const template = approvalChild('gated-comp');
    // start -> ask (approval) -> refund (custom) -> end
    template.spec.requires = ['approval', 'node:acme.compensate'];
    template.spec.nodes = [template.spec.nodes[0], template.spec.nodes[1], compensation('x').spec.nodes[1], { id: 'end', uses: 'core.end@1' }];
    template.spec.edges = [
      { from: 'start', to: 'ask' },
      { from: 'ask', to: 'refund' },
      { from: 'refund', to: 'end' },
    ];
    template.spec.outputs = { refund: { source: 'output', nodeId: 'refund' } };
    const rt1 = await openRuntime(dir, { nodes: { 'acme.compensate@1': compensate(first) } });
    try {
      const paused = await (await rt1.launch({ type: 'inline', template }, { runId: 'gated-1', input: { amount: 4 } })).settled();
      expect(paused.status).toBe('paused');
    } finally {
      await rt1.close();
    }

    const second: Call[] = [];
    const rt2 = await openRuntime(dir, { nodes: { 'acme.compensate@1': compensate(second, 'sha256:compensate-2') } });
    try {
      const before = (await rt2.getRun('gated-1')).lastSeq;
      const report = await rt2.checkRun('gated-1');
      expect(report.ok).toBe(false);
      expect(report.problems).toContainEqual({
        code: 'node.implementation-unavailable',
        severity: 'needs_attention',
        message: 'run gated-1 pins node type acme.compensate@1 with implementation sha256:compensate-1; this host has sha256:compensate-2',
      });
      await expect(rt2.assertRunnable('gated-1')).rejects.toMatchObject({ code: 'run.needs-attention', detail: { status: 'needs_attention' } });
      await expect(rt2.resume('gated-1')).rejects.toMatchObject({ code: 'run.needs-attention' });
      expect((await rt2.getRun('gated-1')).lastSeq).toBe(before);

      // An approval reaches the node anyway: the gateway does not carry the call out, and the
      // node needs a person instead of failing (a host of another build must not end the run).
      await rt2.approve('gated-1', 'ask', { by: 'ops' });
      const outcome = await rt2.kernel.waitFor('gated-1', true);
      expect(outcome).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });
      const events = (await rt2.exportRun('gated-1')).events as any[];
      const abandoned = events.find((e) => e.type === 'capability.abandoned');
      expect(abandoned.payload.reason).toBe('node type acme.compensate@1: the run pinned implementation sha256:compensate-1, but this host has sha256:compensate-2');
      expect(events.find((e) => e.type === 'node.needs-attention').payload.evidence).toMatchObject({ kind: 'node', name: 'acme.compensate@1', reason: 'unavailable' });
      expect(events.some((e) => e.type === 'capability.completed' && e.node?.id === 'refund')).toBe(false);
      expect(second).toEqual([]);
      expect(first).toEqual([]);
      // A recorded replay reproduces it from the journal.
      expect(await rt2.replay('gated-1', { mode: 'recorded' })).toMatchObject({ identical: true });
    } finally {
      await rt2.close();
    }

    // Where the pinned implementation is, an operator asks again: it runs once, and the run ends.
    const rt1b = await openRuntime(dir, { nodes: { 'acme.compensate@1': compensate(first) } });
    try {
      await rt1b.resolve('gated-1', 'refund', { retry: true, by: 'ops' });
      expect(await rt1b.kernel.waitFor('gated-1', false)).toMatchObject({ status: 'completed', output: { refund: { refunded: 400 } } });
      expect(first).toHaveLength(1);
      expect(second).toEqual([]);
    } finally {
      await rt1b.close();
    }

    // The same digest again: the run is runnable (the twin of the refusal above).
    const dir2 = tempDir();
    const third: Call[] = [];
    const rt3 = await openRuntime(dir2, { nodes: { 'acme.compensate@1': compensate(third) } });
    try {
      await (await rt3.launch({ type: 'inline', template }, { runId: 'gated-2', input: { amount: 4 } })).settled();
    } finally {
      await rt3.close();
    }
    const rt4 = await openRuntime(dir2, { nodes: { 'acme.compensate@1': compensate(third) } });
    try {
      expect(await rt4.checkRun('gated-2')).toEqual({ runId: 'gated-2', ok: true, problems: [] });
      await rt4.approve('gated-2', 'ask', { by: 'ops' });
      expect(await rt4.kernel.waitFor('gated-2', false)).toMatchObject({ status: 'completed', output: { refund: { refunded: 400 } } });
      expect(third).toHaveLength(1);
    } finally {
      await rt4.close();
    }
  });

  it('a definition without a digest runs in development only: not publishable, not replayable', async () => {
    const calls: Call[] = [];
    const rt = await openRuntime(tempDir(), { nodes: { 'acme.compensate@1': compensate(calls, null) } });
    try {
      await rt.catalog.putDraft(compensation('dev'), { expectedDraftRevision: 0 });
      await expect(rt.catalog.publish('dev', { expectedDraftRevision: 1 })).rejects.toMatchObject({ code: 'catalog.publish-invalid', errors: [{ code: 'node.definition-undigested', pointer: '/spec/nodes/1/uses' }] });
      const outcome = await (await rt.launch({ type: 'inline', template: compensation('dev') }, { runId: 'dev-1', input: { amount: 1 } })).result;
      expect(outcome.status).toBe('completed');
      const plan = (await rt.exportRun('dev-1')).plan as any;
      expect(plan.replayable).toBe(false);
      expect(plan.nodeDefinitions['acme.compensate@1'].implementationDigest).toBeNull();
      expect(calls).toHaveLength(1);
    } finally {
      await rt.close();
    }
  });

  it('an output that fails the pinned output schema fails the node', async () => {
    const calls: Call[] = [];
    const rt = await openRuntime(tempDir(), { nodes: { 'acme.compensate@1': compensate(calls, 'sha256:compensate-1', { execute: () => ({ nothing: true }) }) } });
    try {
      const outcome = await (await rt.launch({ type: 'inline', template: compensation('shape') }, { runId: 'shape-1', input: { amount: 1 } })).result;
      expect(outcome.status).toBe('failed');
      expect((outcome.error?.detail as any).error).toMatchObject({ code: 'node.output-invalid' });
    } finally {
      await rt.close();
    }
  });
});

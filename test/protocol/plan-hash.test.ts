// The plan hash is composed from each template's canonical JSON (made once for its semantic
// hash); it must stay byte for byte `canonicalDigest` of the plan without its hash, or every plan
// compiled from now on would name a different hash for the same content.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compilePlan, semanticHash, type CompileRequest } from '../../engine/compiler/plan.js';
import { canonicalDigest } from '../../engine/hash.js';
import type { ExecutionPlan } from '../../engine/protocol/plan.js';

const casesDir = join(import.meta.dirname, '..', 'cases');
const noScripts = () => undefined;

function wholeBodyDigest(plan: ExecutionPlan): string {
  const { planHash: _planHash, ...body } = plan;
  return canonicalDigest(body);
}

const apiVersion = 'workflow.gm-hz.dev/v1alpha1';
const tool = (id: string, name: string) => ({ id, uses: 'tool.call@1', config: { tool: name } });
function chain(id: string, nodes: Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  const all = [{ id: 'start', uses: 'core.start@1' }, ...nodes, { id: 'end', uses: 'core.end@1' }];
  const edges = all.slice(1).map((n, i) => ({ from: all[i].id as string, to: n.id as string }));
  return { apiVersion, kind: 'WorkflowTemplate', metadata: { id }, spec: { requires: ['tool:*', 'workflow:*'], nodes: all, edges }, ...extra };
}

describe('plan hash', async () => {
  const requests: [string, CompileRequest][] = [];
  for (const name of readdirSync(casesDir)) {
    const file = join(casesDir, name, 'template.json');
    if (!existsSync(file)) continue;
    const host = (await import(pathToFileURL(join(casesDir, name, 'host.mjs')).href)).default as { dependencies?: CompileRequest['dependencies'] };
    requests.push([`case ${name}`, { root: { template: JSON.parse(readFileSync(file, 'utf8')) }, dependencies: host.dependencies ?? [] }]);
  }
  requests.push(
    ['a template with a layout', { root: { template: chain('laid-out', [tool('a', 'noop')], { layout: { a: { x: 1, y: 2 } } }) } }],
    ['a template with a layout set to null', { root: { template: chain('null-layout', [tool('a', 'noop')], { layout: null }) } }],
    ['a published revision', { root: { template: chain('published', [tool('a', 'noop')]), revision: 7 } }],
    [
      'text outside ASCII, keys that sort by code unit',
      { root: { template: { ...chain('Zz-aa', [tool('b', 'x'), tool('B', 'y'), tool('a', 'z')]), metadata: { id: 'Zz-aa', description: 'naïve Ω \u2028 "quoted" \ud83d\ude00', labels: { 'é': '1', Z: '2', a: '3', '\u00ff': '4', 'ä': '5' } } } } },
    ],
    [
      'dependencies, pinned and inline keys in one plan',
      {
        root: {
          template: chain('caller', [
            { id: 'call1', uses: 'workflow.call@1', config: { workflow: { id: 'child', revision: 2 } } },
            { id: 'call0', uses: 'workflow.call@1', config: { workflow: { id: 'a-child', revision: 10 } } },
          ]),
        },
        dependencies: [
          { template: chain('child', [tool('c', 'noop')], { layout: { c: {} } }), revision: 2 },
          { template: chain('a-child', [tool('d', 'noop')]), revision: 10 },
        ],
      },
    ],
    [
      'host node definitions pinned from the root and a dependency',
      {
        root: { template: chain('custom-root', [{ id: 'c', uses: 'acme.compensate@1', config: { mode: 'refund' } }, { id: 'call', uses: 'workflow.call@1', config: { workflow: { id: 'custom-child', revision: 1 } } }]) },
        dependencies: [{ template: chain('custom-child', [{ id: 'o', uses: 'acme.ocr@2' }]), revision: 1 }],
        nodeDefinitions: [
          { uses: 'acme.compensate@1', configSchema: { type: 'object', properties: { mode: { enum: ['refund'] } } }, effect: 'idempotent', implementationDigest: 'sha256:c1', outputSchema: { type: 'object' }, label: 'compensation' },
          { uses: 'acme.ocr@2', configSchema: {}, implementationDigest: 'sha256:o2' },
          { uses: 'acme.unused@1', configSchema: {} },
        ],
      },
    ],
  );
  for (const [, request] of requests) {
    const spec = (request.root.template as any).spec;
    // `chain` requires tool:* and workflow:*; the custom nodes need node:*.
    if (spec && request.nodeDefinitions) spec.requires = [...spec.requires, 'node:*'];
    for (const d of request.dependencies ?? []) if (request.nodeDefinitions) (d.template as any).spec.requires.push('node:*');
  }

  it.each(requests)('%s: the composed hash is the digest of the whole body', (_name, request) => {
    const plan = compilePlan(request, noScripts);
    expect(plan.planHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(plan.planHash).toBe(wholeBodyDigest(plan));
    for (const t of Object.values(plan.templates)) expect(t.semanticHash).toBe(semanticHash(t.template));
  });

  it('a change anywhere in a template changes the plan hash', () => {
    const base = compilePlan({ root: { template: chain('changes', [tool('a', 'noop')]) } }, noScripts).planHash;
    const renamed = compilePlan({ root: { template: chain('changes', [tool('a', 'other')]) } }, noScripts).planHash;
    const laidOut = compilePlan({ root: { template: chain('changes', [tool('a', 'noop')], { layout: { a: {} } }) } }, noScripts);
    expect(renamed).not.toBe(base);
    // The layout is not part of the semantic hash but is part of the plan (and so of its hash).
    expect(laidOut.planHash).not.toBe(base);
    expect(laidOut.templates['changes@inline'].semanticHash).toBe(compilePlan({ root: { template: chain('changes', [tool('a', 'noop')]) } }, noScripts).templates['changes@inline'].semanticHash);
  });

  it('host node definitions: all of them make the set hash, the used ones are pinned, without any the plan is the engine\'s', () => {
    const template = () => chain('custom', [{ id: 'c', uses: 'acme.compensate@1' }], {});
    const withCustom = (t: any) => ((t.spec.requires = [...t.spec.requires, 'node:acme.compensate']), t);
    const definition = { uses: 'acme.compensate@1', configSchema: {}, effect: 'idempotent' as const, implementationDigest: 'sha256:c1' };
    const plain = compilePlan({ root: { template: chain('custom', [tool('a', 'noop')]) } }, noScripts);
    expect('nodeDefinitions' in plain).toBe(false);
    // Definitions the templates do not use change the set hash only.
    const unused = compilePlan({ root: { template: chain('custom', [tool('a', 'noop')]) }, nodeDefinitions: [definition] }, noScripts);
    expect('nodeDefinitions' in unused).toBe(false);
    expect(unused.nodeDefinitionSetHash).not.toBe(plain.nodeDefinitionSetHash);
    expect(unused.nodeDefinitionSetHash).toBe(canonicalDigest({ engine: plain.nodeDefinitionSetHash, custom: [{ uses: 'acme.compensate@1', schemaHash: canonicalDigest({}), implementationDigest: 'sha256:c1' }] }));
    expect(compilePlan({ root: { template: chain('custom', [tool('a', 'noop')]) }, nodeDefinitions: [] }, noScripts)).toEqual(plain);
    const used = compilePlan({ root: { template: withCustom(template()) }, nodeDefinitions: [definition] }, noScripts);
    expect(used.nodeDefinitions).toEqual({ 'acme.compensate@1': { configSchema: {}, effect: 'idempotent', implementationDigest: 'sha256:c1' } });
    expect(used.replayable).toBe(true);
    // The pinned effect is part of the plan hash, not of the set hash.
    const unknown = compilePlan({ root: { template: withCustom(template()) }, nodeDefinitions: [{ ...definition, effect: 'unknown' }] }, noScripts);
    expect(unknown.nodeDefinitionSetHash).toBe(used.nodeDefinitionSetHash);
    expect(unknown.planHash).not.toBe(used.planHash);
    const undigested = compilePlan({ root: { template: withCustom(template()) }, nodeDefinitions: [{ uses: 'acme.compensate@1', configSchema: {} }] }, noScripts);
    expect(undigested.nodeDefinitions!['acme.compensate@1']).toEqual({ configSchema: {}, effect: 'unknown', implementationDigest: null });
    expect(undigested.replayable).toBe(false);
  });
});

// Drafts, publishing, semantic hashes, diff, search, describe, and published launch targets.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CatalogError, semanticChanges } from '../../dist/hosts/node/catalog.js';
import type { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { api, approvalChild, callerTemplate, openRuntime, publish, removeTempDirs, tempDir, upperTemplate, waitUntil } from './helpers.js';

// One runtime for the tests that need no restart (each uses its own workflow ids); opening the
// engine component is the slow part.
let shared: WorkflowRuntime | undefined;
const open: WorkflowRuntime[] = [];
async function runtime(dir?: string): Promise<WorkflowRuntime> {
  if (dir === undefined) return (shared ??= await openRuntime(tempDir()));
  const rt = await openRuntime(dir);
  open.push(rt);
  return rt;
}
afterEach(async () => {
  for (const rt of open.splice(0)) await rt.close();
});
afterAll(async () => {
  await shared?.close();
  removeTempDirs();
});

function thrown(fn: () => unknown): any {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}

describe('drafts', () => {
  it('compare-and-set: a stale draft revision is refused and nothing changes', async () => {
    const rt = await runtime();
    const first = rt.catalog.putDraft(upperTemplate('cas'), { expectedDraftRevision: 0, by: 'ann' });
    expect(first).toMatchObject({ id: 'cas', draftRevision: 1, lastRevision: 0, updatedBy: 'ann' });

    const again = thrown(() => rt.catalog.putDraft(upperTemplate('cas'), { expectedDraftRevision: 0 }));
    expect(again).toBeInstanceOf(CatalogError);
    expect(again.code).toBe('catalog.draft-conflict');

    const second = rt.catalog.putDraft(upperTemplate('cas', { name: 'by bob' }), { expectedDraftRevision: 1, by: 'bob' });
    expect(second.draftRevision).toBe(2);
    // Ann still holds draft revision 1: her write loses, Bob's stays.
    expect(thrown(() => rt.catalog.putDraft(upperTemplate('cas', { name: 'by ann' }), { expectedDraftRevision: 1, by: 'ann' })).code).toBe('catalog.draft-conflict');
    expect(rt.catalog.getDraft('cas')).toMatchObject({ draftRevision: 2, updatedBy: 'bob', template: { metadata: { name: 'by bob' } } });
    // Publishing also checks the draft revision.
    expect(thrown(() => rt.catalog.publish('cas', { expectedDraftRevision: 1 })).code).toBe('catalog.draft-conflict');
    expect(rt.catalog.listRevisions('cas')).toEqual([]);
  });

  it('a draft without a portable id is refused; a missing draft is not found', async () => {
    const rt = await runtime();
    expect(thrown(() => rt.catalog.putDraft({ apiVersion: api, metadata: { id: 'no spaces allowed' } }, { expectedDraftRevision: 0 })).code).toBe('catalog.draft-invalid-id');
    expect(thrown(() => rt.catalog.getDraft('nothing')).code).toBe('catalog.draft-not-found');
  });
});

describe('publish', () => {
  it('refuses an invalid draft with every error, and publishes nothing', async () => {
    const rt = await runtime();
    const bad = upperTemplate('broken');
    bad.spec.requires = []; // tool:upper is no longer allowed
    bad.spec.nodes.push({ id: 'orphan', uses: 'core.script@1', config: { source: 'return (' } });
    bad.spec.edges.push({ from: 'upper', to: 'nowhere' });
    bad.spec.nodes.push({ id: 'call', uses: 'workflow.call@1', config: { workflow: { id: 'absent', revision: 3 } } });
    bad.spec.edges.push({ from: 'start', to: 'call' }, { from: 'call', to: 'end' });
    rt.catalog.putDraft(bad, { expectedDraftRevision: 0 });
    const err = thrown(() => rt.catalog.publish('broken', { expectedDraftRevision: 1 }));
    expect(err.code).toBe('catalog.publish-invalid');
    const found = err.errors.map((e: any) => `${e.code} ${e.pointer}`).sort();
    expect(found).toEqual(
      [
        'catalog.dependency-missing /spec/nodes/4/config/workflow',
        'edge.unknown-node /spec/edges/2/to',
        'graph.unreachable /spec/nodes/3',
        'requires.missing /spec/nodes/1/uses',
        'requires.missing /spec/nodes/4/uses',
        'script.syntax /spec/nodes/3/config/source',
      ].sort(),
    );
    expect(rt.catalog.listRevisions('broken')).toEqual([]);
    expect(rt.catalog.getDraft('broken').lastRevision).toBe(0);
  });

  it('layout-only edits keep the semantic hash and make no new revision; semantic edits do', async () => {
    const rt = await runtime();
    const r1 = publish(rt, upperTemplate('hashes', { layout: { start: { x: 0, y: 0 } } }));
    expect(r1).toMatchObject({ revision: 1, created: true });
    expect(r1.semanticHash).toMatch(/^sha256:[0-9a-f]{64}$/);

    const moved = publish(rt, upperTemplate('hashes', { layout: { start: { x: 300, y: 40 }, end: { x: 9, y: 9 } } }));
    expect(moved).toMatchObject({ revision: 1, created: false, semanticHash: r1.semanticHash });
    expect(rt.validate(upperTemplate('hashes')).semanticHash).toBe(r1.semanticHash);

    const renamed = publish(rt, upperTemplate('hashes', { name: 'now with a name', layout: { start: { x: 300, y: 40 } } }));
    expect(renamed).toMatchObject({ revision: 2, created: true });
    expect(renamed.semanticHash).not.toBe(r1.semanticHash);

    const edited = upperTemplate('hashes', { name: 'now with a name' });
    edited.spec.nodes[1].config.idempotent = false;
    const r3 = publish(rt, edited);
    expect(r3.revision).toBe(3);
    expect(new Set([r1.semanticHash, renamed.semanticHash, r3.semanticHash]).size).toBe(3);

    // Key order is not semantic either (RFC 8785 canonical JSON).
    const reversed = (v: any): any => (Array.isArray(v) ? v.map(reversed) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reversed(x)])) : v);
    expect(JSON.stringify(reversed(edited))).not.toBe(JSON.stringify(edited));
    expect(rt.validate(reversed(edited)).semanticHash).toBe(r3.semanticHash);

    const diff = rt.catalog.diff({ id: 'hashes', revision: 2 }, { id: 'hashes', revision: 3 });
    expect(diff).toMatchObject({ from: 'hashes@2', to: 'hashes@3', same: false, fromHash: renamed.semanticHash, toHash: r3.semanticHash });
    expect(diff.changes).toEqual([{ op: 'replace', pointer: '/spec/nodes/1/config/idempotent', before: true, after: false }]);
    expect(rt.catalog.diff({ id: 'hashes', revision: 1 }, { id: 'hashes', revision: 2 }).changes).toEqual([{ op: 'add', pointer: '/metadata/name', after: 'now with a name' }]);
  });

  it('revision numbers are never reused after a delete', async () => {
    const rt = await runtime();
    publish(rt, upperTemplate('numbers'));
    publish(rt, upperTemplate('numbers', { name: 'two' }));
    rt.catalog.deleteRevision('numbers', 2);
    expect(thrown(() => rt.catalog.getRevision('numbers', 2)).code).toBe('catalog.revision-not-found');
    expect(publish(rt, upperTemplate('numbers', { name: 'three' })).revision).toBe(3);
    expect(rt.catalog.listRevisions('numbers').map((r) => r.revision)).toEqual([1, 3]);
  });
});

describe('semantic diff', () => {
  it('reports additions, removals and replacements as JSON pointers, layout ignored', () => {
    const a = { metadata: { id: 'x', 'a/b': 1 }, spec: { nodes: [{ id: 'n', x: [1, 2] }] }, layout: { p: 1 } };
    const b = { metadata: { id: 'x', 'a~b': 2 }, spec: { nodes: [{ id: 'n', x: [1] }, { id: 'm' }] }, layout: { p: 2 } };
    expect(semanticChanges(a, b)).toEqual([
      { op: 'remove', pointer: '/metadata/a~1b', before: 1 },
      { op: 'add', pointer: '/metadata/a~0b', after: 2 },
      { op: 'remove', pointer: '/spec/nodes/0/x/1', before: 2 },
      { op: 'add', pointer: '/spec/nodes/1', after: { id: 'm' } },
    ]);
    expect(semanticChanges({ ...a, layout: 'other' }, a)).toEqual([]);
  });
});

describe('search and describe', () => {
  it('finds drafts and revisions by id, name, description and labels', async () => {
    const rt = await runtime();
    publish(rt, upperTemplate('invoice-triage', { name: 'Triage invoices', description: 'routes 100% of vendor mail' }));
    rt.catalog.putDraft(upperTemplate('mail-digest', { name: 'Daily digest' }), { expectedDraftRevision: 0 });
    expect(rt.catalog.search('TRIAGE')).toEqual([{ id: 'invoice-triage', name: 'Triage invoices', description: 'routes 100% of vendor mail', draftRevision: 1, revisions: [1] }]);
    expect(rt.catalog.search('digest').map((h) => h.id)).toEqual(['mail-digest']);
    expect(rt.catalog.search('mail').map((h) => h.id)).toEqual(['invoice-triage', 'mail-digest']);
    expect(rt.catalog.search('100%').map((h) => h.id)).toEqual(['invoice-triage']);
    expect(rt.catalog.search('1_0')).toEqual([]);
  });

  it('describes a revision as schema, template or plan', async () => {
    const rt = await runtime();
    publish(rt, upperTemplate('child'));
    publish(rt, callerTemplate('caller', { id: 'child', revision: 1 }));
    const schema = rt.catalog.describe('caller', 1, 'schema');
    expect(schema).toMatchObject({ id: 'caller', revision: 1, outputs: ['text'], requires: ['workflow:child'], calls: ['child@1'] });
    expect(rt.catalog.describe('caller', 1, 'template').template).toEqual(callerTemplate('caller', { id: 'child', revision: 1 }));
    const { plan } = rt.catalog.describe('caller', 1, 'plan') as any;
    expect(plan.root).toBe('caller@1');
    expect(Object.keys(plan.templates).sort()).toEqual(['caller@1', 'child@1']);
    expect(plan.templates['child@1'].semanticHash).toBe(rt.catalog.getRevision('child', 1).semanticHash);
    expect(thrown(() => rt.catalog.describe('caller', 1, 'pretty' as any)).code).toBe('catalog.bad-view');
  });
});

describe('published launch targets', () => {
  it('pin the same plan as compiling the revision and its closure, and run', async () => {
    const rt = await runtime();
    publish(rt, upperTemplate('child'));
    publish(rt, callerTemplate('caller', { id: 'child', revision: 1 }));
    const handle = await rt.launch({ type: 'published', id: 'caller', revision: 1 }, { input: { word: 'pinned' }, runId: 'pub-1' });
    expect(await handle.result).toMatchObject({ status: 'completed', output: { text: 'PINNED' } });
    const pinned = (await rt.exportRun('pub-1')).plan;
    const compiled = rt.compile(callerTemplate('caller', { id: 'child', revision: 1 }), [{ template: upperTemplate('child'), revision: 1 }], 1);
    expect(pinned).toEqual(compiled);
    expect(pinned.templates['caller@1'].revision).toBe(1);
    // The inline target pins the same kind of plan: same template hashes, root keyed @inline.
    const inline = await rt.launch({ type: 'inline', template: callerTemplate('caller', { id: 'child', revision: 1 }), dependencies: [{ template: upperTemplate('child'), revision: 1 }] }, { input: { word: 'x' }, runId: 'inline-1' });
    await inline.result;
    const inlinePlan = (await rt.exportRun('inline-1')).plan;
    expect(inlinePlan.root).toBe('caller@inline');
    expect(inlinePlan.templates['caller@inline'].semanticHash).toBe(pinned.templates['caller@1'].semanticHash);
    expect(inlinePlan.templates['child@1']).toEqual(pinned.templates['child@1']);
    expect(inlinePlan.nodeDefinitionSetHash).toBe(pinned.nodeDefinitionSetHash);
  });

  it('refuses a revision that is not published, before anything is journaled', async () => {
    const rt = await runtime();
    await expect(rt.launch({ type: 'published', id: 'ghost', revision: 1 }, { runId: 'ghost-1' })).rejects.toMatchObject({ code: 'catalog.revision-not-found' });
    expect(rt.store.getRun('ghost-1')).toBeUndefined();
  });

  it('a run whose sub-workflow revision is deleted after launch still resumes and replays', async () => {
    const dir = tempDir();
    const rt1 = await openRuntime(dir);
    publish(rt1, approvalChild('gated'));
    publish(rt1, callerTemplate('outer', { id: 'gated', revision: 1 }));
    await rt1.launch({ type: 'published', id: 'outer', revision: 1 }, { input: { word: 'later' }, runId: 'outer-1' });
    const childId = await waitUntil(async () => (await rt1.listRuns({ statuses: ['paused'] }))[0]?.runId);
    rt1.catalog.deleteRevision('gated', 1);
    rt1.catalog.deleteRevision('outer', 1);
    await expect(rt1.launch({ type: 'published', id: 'outer', revision: 1 })).rejects.toMatchObject({ code: 'catalog.revision-not-found' });
    await rt1.close();

    const rt2 = await runtime(dir);
    expect(rt2.catalog.listRevisions('gated')).toEqual([]);
    await rt2.approve(childId, 'ask', { by: 'ops' });
    expect(await (await rt2.resume(childId)).result).toMatchObject({ status: 'completed', output: { text: 'LATER' } });
    expect(await (await rt2.resume('outer-1')).result).toMatchObject({ status: 'completed', output: { text: 'LATER' } });
    for (const runId of ['outer-1', childId]) {
      expect(await rt2.replay(runId, { mode: 'recorded' })).toMatchObject({ identical: true });
    }
    expect((await rt2.exportRun('outer-1')).plan.templates['gated@1'].template.metadata.id).toBe('gated');
  });
});

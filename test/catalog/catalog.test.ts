// Drafts, publishing, semantic hashes, diff, search, describe, and published launch targets, on
// both stores: a SQLite file and a PostgreSQL schema (dropped at the end). When PostgreSQL is
// unreachable its cases fail and say how to start it; they are never skipped.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CatalogError, semanticChanges } from '../../dist/hosts/node/catalog/catalog.js';
import type { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { api, approvalChild, callerTemplate, openRuntime, postgresStores, publish, removeTempDirs, sqliteStores, upperTemplate, waitUntil } from './helpers.js';

async function rejection(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}

const harnesses = [sqliteStores(), postgresStores()];
afterAll(() => removeTempDirs());

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

describe.each(harnesses)('catalog on $name', (stores) => {
  // One runtime for the tests that need no restart (each uses its own workflow ids); opening the
  // engine component is the slow part.
  let shared: WorkflowRuntime | undefined;
  const open: WorkflowRuntime[] = [];
  // Every case checks that its store is reachable, so that without PostgreSQL each of its cases
  // fails (with how to start it) instead of being reported as skipped.
  async function openOn(options: Record<string, unknown>): Promise<WorkflowRuntime> {
    await stores.assertReachable();
    return openRuntime(options.dir as string, options);
  }
  async function runtime(options?: Record<string, unknown>): Promise<WorkflowRuntime> {
    if (options === undefined) return (shared ??= await openOn(stores.fresh()));
    const rt = await openOn(options);
    open.push(rt);
    return rt;
  }
  afterEach(async () => {
    for (const rt of open.splice(0)) await rt.close();
  });
  afterAll(async () => {
    await shared?.close();
    await stores.cleanup();
  });

  describe('drafts', () => {
    it('compare-and-set: a stale draft revision is refused and nothing changes', async () => {
      const rt = await runtime();
      const first = await rt.catalog.putDraft(upperTemplate('cas'), { expectedDraftRevision: 0, by: 'ann' });
      expect(first).toMatchObject({ id: 'cas', draftRevision: 1, lastRevision: 0, updatedBy: 'ann' });

      const again = await rejection(rt.catalog.putDraft(upperTemplate('cas'), { expectedDraftRevision: 0 }));
      expect(again).toBeInstanceOf(CatalogError);
      expect(again.code).toBe('catalog.draft-conflict');

      const second = await rt.catalog.putDraft(upperTemplate('cas', { name: 'by bob' }), { expectedDraftRevision: 1, by: 'bob' });
      expect(second.draftRevision).toBe(2);
      // Ann still holds draft revision 1: her write loses, Bob's stays.
      expect((await rejection(rt.catalog.putDraft(upperTemplate('cas', { name: 'by ann' }), { expectedDraftRevision: 1, by: 'ann' }))).code).toBe('catalog.draft-conflict');
      expect(await rt.catalog.getDraft('cas')).toMatchObject({ draftRevision: 2, updatedBy: 'bob', template: { metadata: { name: 'by bob' } } });
      // Publishing also checks the draft revision.
      expect((await rejection(rt.catalog.publish('cas', { expectedDraftRevision: 1 }))).code).toBe('catalog.draft-conflict');
      expect(await rt.catalog.listRevisions('cas')).toEqual([]);
    });

    it('a draft without a portable id is refused; a missing draft is not found', async () => {
      const rt = await runtime();
      expect((await rejection(rt.catalog.putDraft({ apiVersion: api, metadata: { id: 'no spaces allowed' } }, { expectedDraftRevision: 0 }))).code).toBe('catalog.draft-invalid-id');
      expect((await rejection(rt.catalog.getDraft('nothing'))).code).toBe('catalog.draft-not-found');
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
      await rt.catalog.putDraft(bad, { expectedDraftRevision: 0 });
      const err = await rejection(rt.catalog.publish('broken', { expectedDraftRevision: 1 }));
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
      expect(await rt.catalog.listRevisions('broken')).toEqual([]);
      expect((await rt.catalog.getDraft('broken')).lastRevision).toBe(0);
    });

    it('layout-only edits keep the semantic hash and make no new revision; semantic edits do', async () => {
      const rt = await runtime();
      const r1 = await publish(rt, upperTemplate('hashes', { layout: { start: { x: 0, y: 0 } } }));
      expect(r1).toMatchObject({ revision: 1, created: true });
      expect(r1.semanticHash).toMatch(/^sha256:[0-9a-f]{64}$/);

      const moved = await publish(rt, upperTemplate('hashes', { layout: { start: { x: 300, y: 40 }, end: { x: 9, y: 9 } } }));
      expect(moved).toMatchObject({ revision: 1, created: false, semanticHash: r1.semanticHash });
      expect((await rt.validate(upperTemplate('hashes'))).semanticHash).toBe(r1.semanticHash);

      const renamed = await publish(rt, upperTemplate('hashes', { name: 'now with a name', layout: { start: { x: 300, y: 40 } } }));
      expect(renamed).toMatchObject({ revision: 2, created: true });
      expect(renamed.semanticHash).not.toBe(r1.semanticHash);

      const edited = upperTemplate('hashes', { name: 'now with a name' });
      edited.spec.nodes[1].config.idempotent = false;
      const r3 = await publish(rt, edited);
      expect(r3.revision).toBe(3);
      expect(new Set([r1.semanticHash, renamed.semanticHash, r3.semanticHash]).size).toBe(3);

      // Key order is not semantic either (RFC 8785 canonical JSON).
      const reversed = (v: any): any => (Array.isArray(v) ? v.map(reversed) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reversed(x)])) : v);
      expect(JSON.stringify(reversed(edited))).not.toBe(JSON.stringify(edited));
      expect((await rt.validate(reversed(edited))).semanticHash).toBe(r3.semanticHash);

      const diff = await rt.catalog.diff({ id: 'hashes', revision: 2 }, { id: 'hashes', revision: 3 });
      expect(diff).toMatchObject({ from: 'hashes@2', to: 'hashes@3', same: false, fromHash: renamed.semanticHash, toHash: r3.semanticHash });
      expect(diff.changes).toEqual([{ op: 'replace', pointer: '/spec/nodes/1/config/idempotent', before: true, after: false }]);
      expect((await rt.catalog.diff({ id: 'hashes', revision: 1 }, { id: 'hashes', revision: 2 })).changes).toEqual([{ op: 'add', pointer: '/metadata/name', after: 'now with a name' }]);
    });

    it('revision numbers are never reused after a delete', async () => {
      const rt = await runtime();
      await publish(rt, upperTemplate('numbers'));
      await publish(rt, upperTemplate('numbers', { name: 'two' }));
      await rt.catalog.deleteRevision('numbers', 2);
      expect((await rejection(rt.catalog.getRevision('numbers', 2))).code).toBe('catalog.revision-not-found');
      expect((await publish(rt, upperTemplate('numbers', { name: 'three' }))).revision).toBe(3);
      expect((await rt.catalog.listRevisions('numbers')).map((r) => r.revision)).toEqual([1, 3]);
    });
  });

  describe('search and describe', () => {
    it('finds drafts and revisions by id, name, description and labels', async () => {
      const rt = await runtime();
      await publish(rt, upperTemplate('invoice-triage', { name: 'Triage invoices', description: 'routes 100% of vendor mail' }));
      await rt.catalog.putDraft(upperTemplate('mail-digest', { name: 'Daily digest' }), { expectedDraftRevision: 0 });
      expect(await rt.catalog.search('TRIAGE')).toEqual([{ id: 'invoice-triage', name: 'Triage invoices', description: 'routes 100% of vendor mail', draftRevision: 1, revisions: [1] }]);
      expect((await rt.catalog.search('digest')).map((h) => h.id)).toEqual(['mail-digest']);
      expect((await rt.catalog.search('mail')).map((h) => h.id)).toEqual(['invoice-triage', 'mail-digest']);
      expect((await rt.catalog.search('100%')).map((h) => h.id)).toEqual(['invoice-triage']);
      expect(await rt.catalog.search('1_0')).toEqual([]);
    });

    it('describes a revision as schema, template or plan', async () => {
      const rt = await runtime();
      await publish(rt, upperTemplate('child'));
      await publish(rt, callerTemplate('caller', { id: 'child', revision: 1 }));
      const schema = await rt.catalog.describe('caller', 1, 'schema');
      expect(schema).toMatchObject({ id: 'caller', revision: 1, outputs: ['text'], requires: ['workflow:child'], calls: ['child@1'] });
      expect((await rt.catalog.describe('caller', 1, 'template')).template).toEqual(callerTemplate('caller', { id: 'child', revision: 1 }));
      const { plan } = (await rt.catalog.describe('caller', 1, 'plan')) as any;
      expect(plan.root).toBe('caller@1');
      expect(Object.keys(plan.templates).sort()).toEqual(['caller@1', 'child@1']);
      expect(plan.templates['child@1'].semanticHash).toBe((await rt.catalog.getRevision('child', 1)).semanticHash);
      expect((await rejection(rt.catalog.describe('caller', 1, 'pretty' as any))).code).toBe('catalog.bad-view');
    });
  });

  describe('published launch targets', () => {
    it('pin the same plan as compiling the revision and its closure, and run', async () => {
      const rt = await runtime();
      await publish(rt, upperTemplate('child'));
      await publish(rt, callerTemplate('caller', { id: 'child', revision: 1 }));
      const handle = await rt.launch({ type: 'published', id: 'caller', revision: 1 }, { input: { word: 'pinned' }, runId: 'pub-1' });
      expect(await handle.result).toMatchObject({ status: 'completed', output: { text: 'PINNED' } });
      const pinned = (await rt.exportRun('pub-1')).plan;
      const compiled = await rt.compile(callerTemplate('caller', { id: 'child', revision: 1 }), [{ template: upperTemplate('child'), revision: 1 }], 1);
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
      expect(await rt.store.getRun('ghost-1')).toBeUndefined();
    });

    it('a run whose sub-workflow revision is deleted after launch still resumes and replays', async () => {
      const options = stores.fresh();
      const rt1 = await openOn(options);
      await publish(rt1, approvalChild('gated'));
      await publish(rt1, callerTemplate('outer', { id: 'gated', revision: 1 }));
      await rt1.launch({ type: 'published', id: 'outer', revision: 1 }, { input: { word: 'later' }, runId: 'outer-1' });
      const childId = await waitUntil(async () => (await rt1.listRuns({ statuses: ['paused'] }))[0]?.runId);
      await rt1.catalog.deleteRevision('gated', 1);
      await rt1.catalog.deleteRevision('outer', 1);
      await expect(rt1.launch({ type: 'published', id: 'outer', revision: 1 })).rejects.toMatchObject({ code: 'catalog.revision-not-found' });
      await rt1.close();

      const rt2 = await runtime(options);
      expect(await rt2.catalog.listRevisions('gated')).toEqual([]);
      await rt2.approve(childId, 'ask', { by: 'ops' });
      expect(await (await rt2.resume(childId)).result).toMatchObject({ status: 'completed', output: { text: 'LATER' } });
      expect(await (await rt2.resume('outer-1')).result).toMatchObject({ status: 'completed', output: { text: 'LATER' } });
      for (const runId of ['outer-1', childId]) {
        expect(await rt2.replay(runId, { mode: 'recorded' })).toMatchObject({ identical: true });
      }
      expect((await rt2.exportRun('outer-1')).plan.templates['gated@1'].template.metadata.id).toBe('gated');
    });
  });

  describe('concurrent publishers', () => {
    it('two runtimes publishing one workflow at once get distinct revisions, never reused', async () => {
      const options = stores.fresh();
      const [a, b] = [await runtime(options), await runtime(options)];
      const rounds = 5;
      // Each publisher edits the draft (its own name each round) and publishes what it wrote,
      // reading again after a conflict: every edit it publishes becomes a revision of its own.
      // Between its own awaits each may overtake the other, on either store.
      async function publisher(rt: WorkflowRuntime, who: string): Promise<{ revision: number; name: string }[]> {
        const out: { revision: number; name: string }[] = [];
        for (let i = 0; i < rounds; i++) {
          const name = `${who} ${i}`;
          for (;;) {
            const expected = await rt.catalog.getDraft('race').then((d) => d.draftRevision, () => 0);
            try {
              const draft = await rt.catalog.putDraft(upperTemplate('race', { name }), { expectedDraftRevision: expected, by: who });
              const revision = await rt.catalog.publish('race', { expectedDraftRevision: draft.draftRevision, by: who });
              expect(revision.created).toBe(true);
              out.push({ revision: revision.revision, name });
              break;
            } catch (err) {
              if ((err as { code?: string }).code !== 'catalog.draft-conflict') throw err;
              // Back off a little: two clients retrying in lockstep would keep overtaking each other.
              await new Promise((r) => setTimeout(r, Math.random() * 20));
            }
          }
        }
        return out;
      }
      const [byA, byB] = await Promise.all([publisher(a, 'ann'), publisher(b, 'bob')]);
      const all = [...byA, ...byB].sort((x, y) => x.revision - y.revision);
      expect(all.map((r) => r.revision)).toEqual(Array.from({ length: 2 * rounds }, (_, i) => i + 1));
      // Each revision holds the template its publisher validated, and both see the same list.
      const stored = await b.catalog.listRevisions('race');
      expect(stored.map((r) => ({ revision: r.revision, name: r.template.metadata.name }))).toEqual(all);
      expect((await a.catalog.getDraft('race')).lastRevision).toBe(2 * rounds);

      // Two publishes of one draft revision at once: one revision, answered to both.
      await a.catalog.deleteRevision('race', 2 * rounds);
      const draft = await a.catalog.putDraft(upperTemplate('race', { name: 'both' }), { expectedDraftRevision: (await a.catalog.getDraft('race')).draftRevision });
      const both = await Promise.all([a.catalog.publish('race', { expectedDraftRevision: draft.draftRevision }), b.catalog.publish('race', { expectedDraftRevision: draft.draftRevision })]);
      expect(both.map((r) => r.revision)).toEqual([2 * rounds + 1, 2 * rounds + 1]);
      expect(both.map((r) => r.created).sort()).toEqual([false, true]);
      expect((await a.catalog.listRevisions('race')).map((r) => r.revision)).toEqual([...Array.from({ length: 2 * rounds - 1 }, (_, i) => i + 1), 2 * rounds + 1]);
    });
  });
});

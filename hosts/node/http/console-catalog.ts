// The console's catalog routes: workflows, their published revisions and draft, the semantic
// diff of two revisions, the engine's validation of a template (errors at their JSON pointers),
// and, for the operator token, a compare-and-set draft save and publish.
//
//   GET  /v1/console/catalog?q=                     workflows whose id, name, description or labels contain q
//   GET  /v1/console/catalog/:id                    { id, draft?, revisions }
//   GET  /v1/console/catalog/:id/diff?a=N&b=M       the semantic diff of id@a and id@b
//   POST /v1/console/validate { template }          the engine's validation report (reads nothing, changes nothing)
//   POST /v1/console/catalog/:id/draft { template, expectedDraftRevision }   operator
//   POST /v1/console/catalog/:id/publish { expectedDraftRevision }           operator
import type { ConsoleHost } from './console-routes.js';
import { HttpError, intParam } from './http-error.js';

export async function catalogList(rt: ConsoleHost, url: URL) {
  return { workflows: await rt.catalog.search(url.searchParams.get('q') ?? '') };
}

export async function catalogEntry(rt: ConsoleHost, id: string) {
  const revisions = await rt.catalog.listRevisions(id);
  let draft: { draftRevision: number; lastRevision: number; updatedAt: number; updatedBy: string; template: unknown } | undefined;
  try {
    const d = await rt.catalog.getDraft(id);
    draft = { draftRevision: d.draftRevision, lastRevision: d.lastRevision, updatedAt: d.updatedAt, updatedBy: d.updatedBy, template: d.template };
  } catch (err) {
    if (!String((err as { code?: unknown }).code ?? '').endsWith('not-found')) throw err;
  }
  if (revisions.length === 0 && draft === undefined) throw new HttpError(404, 'catalog.workflow-not-found', `workflow ${id} has neither a draft nor a published revision`);
  return {
    id,
    ...(draft ? { draft } : {}),
    revisions: revisions.map((r) => ({ revision: r.revision, semanticHash: r.semanticHash, draftRevision: r.draftRevision, publishedAt: r.publishedAt, publishedBy: r.publishedBy })),
  };
}

export async function catalogDiff(rt: ConsoleHost, id: string, url: URL) {
  const a = intParam(url.searchParams.get('a'), 'a', 0);
  const b = intParam(url.searchParams.get('b'), 'b', 0);
  if (a === 0 || b === 0) throw new HttpError(400, 'http.bad-request', 'a and b must be published revisions (1 or more)');
  return rt.catalog.diff({ id, revision: a }, { id, revision: b });
}

export function expectedRevision(body: Record<string, unknown>): number {
  const v = body.expectedDraftRevision;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new HttpError(400, 'http.bad-request', 'expectedDraftRevision must be a non-negative integer (0 for a new workflow)');
  return v;
}

/** The draft's template must name the workflow of its route. */
export function draftTemplate(id: string, body: Record<string, unknown>): unknown {
  const t = body.template as { metadata?: { id?: unknown } } | undefined;
  if (typeof t !== 'object' || t === null || Array.isArray(t)) throw new HttpError(400, 'http.bad-request', 'template must be a JSON object');
  if (t.metadata?.id !== id) throw new HttpError(400, 'http.bad-request', `the template's /metadata/id must be ${JSON.stringify(id)}, the workflow of this route`);
  return t;
}

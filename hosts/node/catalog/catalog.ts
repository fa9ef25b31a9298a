// The workflow catalog of the Node host, in the same database as the journal (schema v2): SQLite
// (`stores/sqlite/catalog.ts`) or PostgreSQL (`stores/pg/catalog.ts`), behind `CatalogStorage`.
//
// Version dimensions have distinct names and never mix:
//   draftRevision    compare-and-set counter of a mutable draft (1, 2, ... per edit)
//   revision         immutable published revision of a workflow id (1, 2, ...; never reused)
//   bindingRevision  immutable revision of a trigger binding (bindings.ts; `binding_revision`)
//   seq              position of an event in a run's journal
//   schemaVersion    version of the store schema (`user_version`)
//
// Runs never read the catalog after launch: a launch compiles the revision and the closure of
// its `workflow.call@1` revisions into a pinned plan, so deleting a revision never breaks a run.
import { sha256Digest } from '../../shared/digest.js';
import canonicalizeModule from 'canonicalize';
import { isObject } from '../../core/json-input.js';
import { isPortableId, portableIdSource } from '../../../engine/protocol/ids.js';
import type { ExecutionPlan, HostNodeDefinition, ValidationReport } from '../../core/types.js';
import type { NodeImplementation } from '../../core/gateway-registry.js';

import { CodedError } from '../../../engine/protocol/coded-error.js';
import { nodeCapability } from '../../../engine/protocol/authority.js';

const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as unknown as (value: unknown) => string | undefined;

const searchResultsMax = 100;

export interface CatalogProblem {
  code: string;
  /** JSON pointer into the template. */
  pointer: string;
  message: string;
}

/** A catalog operation refused; `errors` lists every problem when there are several. */
export class CatalogError extends CodedError {
  constructor(
    code: string,
    message: string,
    readonly errors: CatalogProblem[] = [],
  ) {
    super(code, message, errors.length > 0 ? { errors } : undefined);
    this.name = 'CatalogError';
  }
}

export interface WorkflowDraft {
  id: string;
  draftRevision: number;
  template: unknown;
  /** Highest revision published so far (0: none). */
  lastRevision: number;
  updatedAt: number;
  updatedBy: string;
}

export interface WorkflowRevision {
  id: string;
  revision: number;
  semanticHash: string;
  template: any;
  /** The draft revision it was published from. */
  draftRevision: number;
  publishedAt: number;
  publishedBy: string;
}

export interface SearchHit {
  id: string;
  name?: string;
  description?: string;
  draftRevision?: number;
  revisions: number[];
}

export interface SemanticChange {
  op: 'add' | 'remove' | 'replace';
  /** JSON pointer into the templates (both sides share the pointer). */
  pointer: string;
  before?: unknown;
  after?: unknown;
}

export interface SemanticDiff {
  from: string;
  to: string;
  fromHash: string;
  toHash: string;
  /** True when the semantic hashes are equal; layout is ignored. */
  same: boolean;
  changes: SemanticChange[];
}

// ---------------------------------------------------------------------------------------------
// Canonical digests (the engine's algorithm: SHA-256 of RFC 8785 JSON, `sha256:<hex>`).

export function canonicalDigest(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new CatalogError('catalog.not-canonical', 'the value cannot be canonicalized');
  return sha256Digest(text);
}

// ---------------------------------------------------------------------------------------------
// Custom node definitions registered by the host.

/**
 * A node definition of the host: what a template's node of type `uses` is configured with, what
 * running one does (`execute`, through the gateway as a call of kind `node`), and what its effect
 * is. The engine validates, pins and runs it (engine/nodes/custom.ts); see docs/catalog.md.
 */
export interface CustomNodeDefinition extends NodeImplementation {
  uses: string;
}

const effects = ['read-only', 'idempotent', 'unknown'];

function shadowsBuiltIn(uses: string): CatalogError {
  return new CatalogError('node.definition-shadows-builtin', `${uses} is built into the engine; a host definition needs a name of its own`);
}

/**
 * Node definitions the host registers next to the engine's built-in ones. Compile and validate
 * requests carry them (`requestDefinitions`); the engine folds them into the plan's
 * `nodeDefinitionSetHash` and pins those a template uses. The gateway runs them (`get`).
 */
export class NodeDefinitionRegistry {
  private readonly definitions = new Map<string, CustomNodeDefinition>();
  /** The engine's own node types (`reserve`): names a host definition may not take. */
  private readonly builtIn = new Set<string>();

  /**
   * The engine's node types: a definition registered under one of their names is refused here,
   * when it is registered, rather than by every later validation.
   */
  reserve(uses: Iterable<string>): void {
    for (const u of uses) this.builtIn.add(u);
    for (const u of this.definitions.keys()) if (this.builtIn.has(u)) throw shadowsBuiltIn(u);
  }

  register(definition: CustomNodeDefinition): void {
    if (!/^[a-z][a-z0-9.-]*@[0-9]+$/.test(definition.uses)) throw new CatalogError('node.definition-invalid', `node type ${JSON.stringify(definition.uses)} must look like "vendor.name@1"`);
    if (this.builtIn.has(definition.uses)) throw shadowsBuiltIn(definition.uses);
    if (definition.effect !== undefined && !effects.includes(definition.effect)) throw new CatalogError('node.definition-invalid', `node type ${definition.uses}: effect must be read-only, idempotent or unknown, got ${JSON.stringify(definition.effect)}`);
    if (definition.execute !== undefined && typeof definition.execute !== 'function') throw new CatalogError('node.definition-invalid', `node type ${definition.uses}: execute must be a function`);
    this.definitions.set(definition.uses, { ...definition });
  }

  get(uses: string): CustomNodeDefinition | undefined {
    return this.definitions.get(uses);
  }

  get size(): number {
    return this.definitions.size;
  }

  /** Every registered definition, by `uses`. */
  list(): CustomNodeDefinition[] {
    return [...this.definitions.values()].sort((a, b) => (a.uses < b.uses ? -1 : a.uses > b.uses ? 1 : 0));
  }

  /** The definitions as a compile or validate request carries them to the engine. */
  requestDefinitions(): HostNodeDefinition[] {
    return this.list().map((d) => ({
      uses: d.uses,
      configSchema: d.configSchema ?? {},
      effect: d.effect ?? 'unknown',
      ...(d.implementationDigest !== undefined ? { implementationDigest: d.implementationDigest } : {}),
      ...(d.outputSchema !== undefined ? { outputSchema: d.outputSchema } : {}),
      ...(d.label !== undefined ? { label: d.label } : {}),
    })) as HostNodeDefinition[];
  }

  /**
   * The node-definition-set hash of the engine's definitions plus these: what the engine pins in
   * a plan it compiles with them (engine/nodes/custom.ts `setHashWithHost`), computed here so a
   * stored run can be compared without compiling.
   */
  setHash(engineHash: string): string {
    if (this.definitions.size === 0) return engineHash;
    const custom = [...this.definitions.values()]
      .map((d) => ({ uses: d.uses, schemaHash: canonicalDigest(d.configSchema ?? {}), implementationDigest: d.implementationDigest ?? null }))
      .sort((a, b) => (a.uses < b.uses ? -1 : a.uses > b.uses ? 1 : 0));
    return canonicalDigest({ engine: engineHash, custom });
  }

  /** Nodes of a template that use a registered definition without an implementation digest. */
  undigestedUses(template: any): CatalogProblem[] {
    const out: CatalogProblem[] = [];
    const nodes: any[] = Array.isArray(template?.spec?.nodes) ? template.spec.nodes : [];
    nodes.forEach((node, i) => {
      const d = typeof node?.uses === 'string' ? this.definitions.get(node.uses) : undefined;
      if (d && !d.implementationDigest) {
        out.push({ code: 'node.definition-undigested', pointer: `/spec/nodes/${i}/uses`, message: `node type ${d.uses} has no implementation digest; it may run only in a non-replayable development run and cannot be published` });
      }
    });
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Semantic diff: JSON-pointer changes between two templates, layout excluded.

function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function diffValues(a: unknown, b: unknown, pointer: string, out: SemanticChange[]): void {
  if (Array.isArray(a) && Array.isArray(b)) {
    const n = Math.max(a.length, b.length);
    for (let i = 0; i < n; i++) {
      const p = `${pointer}/${i}`;
      if (i >= a.length) out.push({ op: 'add', pointer: p, after: b[i] });
      else if (i >= b.length) out.push({ op: 'remove', pointer: p, before: a[i] });
      else diffValues(a[i], b[i], p, out);
    }
    return;
  }
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const k of keys) {
      const p = `${pointer}/${escapePointer(k)}`;
      if (!(k in a)) out.push({ op: 'add', pointer: p, after: b[k] });
      else if (!(k in b)) out.push({ op: 'remove', pointer: p, before: a[k] });
      else diffValues(a[k], b[k], p, out);
    }
    return;
  }
  if (canonicalize(a) !== canonicalize(b)) out.push({ op: 'replace', pointer, before: a, after: b });
}

/** Changes from `a` to `b`, ignoring `layout`. Arrays are compared position by position. */
export function semanticChanges(a: unknown, b: unknown): SemanticChange[] {
  const strip = (t: unknown) => {
    if (!isObject(t)) return t;
    const { layout: _layout, ...rest } = t;
    return rest;
  };
  const out: SemanticChange[] = [];
  diffValues(strip(a), strip(b), '', out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The catalog.

export interface CatalogEngine {
  validate(template: unknown): Promise<ValidationReport>;
  /** Compiles a root template and its dependencies into a pinned plan (throws on errors). */
  compile(template: unknown, dependencies: { template: unknown; revision: number }[], revision: number): Promise<ExecutionPlan>;
}

export interface CatalogOptions {
  engine: CatalogEngine;
  nodeDefinitions?: NodeDefinitionRegistry;
  now?: () => number;
}

/** `workflow.call@1` targets of a template (direct and as a foreach body), with JSON pointers. */
export function callTargets(template: any): { id: string; revision: number; pointer: string }[] {
  const out: { id: string; revision: number; pointer: string }[] = [];
  const nodes: any[] = Array.isArray(template?.spec?.nodes) ? template.spec.nodes : [];
  nodes.forEach((node, i) => {
    if (node?.uses === 'workflow.call@1') out.push({ ...node.config?.workflow, pointer: `/spec/nodes/${i}/config/workflow` });
    if (node?.uses === 'core.foreach@1' && node.config?.body?.uses === 'workflow.call@1') out.push({ ...node.config.body.config?.workflow, pointer: `/spec/nodes/${i}/config/body/config/workflow` });
  });
  return out.filter((t) => typeof t.id === 'string' && Number.isInteger(t.revision));
}

/** What `search` matches: id, name, description and labels (`k=v`), lower case, one per line. */
export function searchText(template: any): string {
  const m = isObject(template?.metadata) ? (template.metadata as Record<string, any>) : {};
  const labels = isObject(m.labels) ? Object.entries(m.labels).map(([k, v]) => `${k}=${v}`) : [];
  return [m.id, m.name, m.description, ...labels].filter((s) => typeof s === 'string').join('\n').toLowerCase();
}

// ---------------------------------------------------------------------------------------------
// Storage: where drafts and revisions are kept (SQLite: `stores/sqlite/catalog.ts`, PostgreSQL:
// `stores/pg/catalog.ts`). Rows use the column names of the schema-v2 tables on both.

export type MaybePromise<T> = T | Promise<T>;

export interface DraftRow {
  workflow_id: string;
  draft_revision: number;
  template: Buffer;
  last_revision: number;
  updated_at: number;
  updated_by: string;
}

export interface RevisionRow {
  workflow_id: string;
  revision: number;
  semantic_hash: string;
  template: Buffer;
  draft_revision: number;
  published_at: number;
  published_by: string;
}

/** A workflow matched by a search: its draft (if any), its revision numbers and its latest revision's template. */
export interface SearchRow {
  workflow_id: string;
  draft_revision: number | null;
  draft_template: Buffer | null;
  /** Ascending. */
  revisions: number[];
  latest_template: Buffer | null;
}

export interface RevisionRef {
  id: string;
  revision: number;
}

/**
 * What the catalog needs from a database. Methods may answer synchronously (SQLite) or with a
 * promise (PostgreSQL); the catalog awaits them either way. Compare-and-set failures are answers
 * (`{ conflict }` with the draft revision found), not errors, so both stores report them alike.
 */
export interface CatalogStorage {
  getDraft(id: string): MaybePromise<DraftRow | undefined>;
  /**
   * Inserts the draft when `expectedDraftRevision` is 0 and none exists, or replaces the one at
   * `expectedDraftRevision` (its draft revision grows by one). Atomic.
   */
  putDraft(draft: { id: string; template: Buffer; searchText: string; expectedDraftRevision: number; at: number; by: string }): MaybePromise<{ row: DraftRow } | { conflict: number }>;
  /**
   * In one transaction: checks that the draft is at `expectedDraftRevision`; answers the latest
   * revision (`created: false`) when its semantic hash is `semanticHash`; otherwise inserts the
   * draft's template as revision `last_revision + 1` and bumps `last_revision`.
   */
  publish(p: { id: string; expectedDraftRevision: number; semanticHash: string; searchText: string; at: number; by: string }): MaybePromise<{ row: RevisionRow; created: boolean } | { conflict: number }>;
  /** The revisions among `refs` that exist, in any order. */
  getRevisions(refs: readonly RevisionRef[]): MaybePromise<RevisionRow[]>;
  /** A workflow's revisions, ascending. */
  listRevisions(id: string): MaybePromise<RevisionRow[]>;
  /** False when there was no such revision. */
  deleteRevision(id: string, revision: number): MaybePromise<boolean>;
  /**
   * Workflows whose draft or a revision has a `search_text` matching `like` (a LIKE pattern with
   * `\` as its escape character), by workflow id in byte order, at most `limit`.
   */
  search(like: string, limit: number): MaybePromise<SearchRow[]>;
}

function draftOf(row: DraftRow): WorkflowDraft {
  return { id: row.workflow_id, draftRevision: row.draft_revision, template: JSON.parse(row.template.toString('utf8')), lastRevision: row.last_revision, updatedAt: row.updated_at, updatedBy: row.updated_by };
}

function revisionOf(row: RevisionRow): WorkflowRevision {
  return {
    id: row.workflow_id,
    revision: row.revision,
    semanticHash: row.semantic_hash,
    template: JSON.parse(row.template.toString('utf8')),
    draftRevision: row.draft_revision,
    publishedAt: row.published_at,
    publishedBy: row.published_by,
  };
}

const refKey = (r: RevisionRef) => `${r.id}@${r.revision}`;

export class WorkflowCatalog {
  private readonly now: () => number;
  readonly nodeDefinitions: NodeDefinitionRegistry;

  constructor(
    readonly storage: CatalogStorage,
    private readonly options: CatalogOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.nodeDefinitions = options.nodeDefinitions ?? new NodeDefinitionRegistry();
  }

  /**
   * Creates or replaces a draft. `expectedDraftRevision` is the draft revision the caller last
   * read (0: the draft must not exist yet); any other value than the stored one is a conflict.
   * A draft may be invalid; only `publish` validates.
   */
  async putDraft(template: unknown, options: { expectedDraftRevision: number; by?: string }): Promise<WorkflowDraft> {
    const id = (template as any)?.metadata?.id;
    if (!isPortableId(id)) {
      throw new CatalogError('catalog.draft-invalid-id', `a draft needs /metadata/id, a portable id (${portableIdSource})`, [{ code: 'catalog.draft-invalid-id', pointer: '/metadata/id', message: 'missing or not a portable id' }]);
    }
    const bytes = Buffer.from(JSON.stringify(template), 'utf8');
    const result = await this.storage.putDraft({ id, template: bytes, searchText: searchText(template), expectedDraftRevision: options.expectedDraftRevision, at: this.now(), by: options.by ?? 'sdk' });
    if ('conflict' in result) {
      throw new CatalogError('catalog.draft-conflict', `draft ${id} is at draft revision ${result.conflict}, not ${options.expectedDraftRevision}; read it again and retry`);
    }
    return draftOf(result.row);
  }

  async getDraft(id: string): Promise<WorkflowDraft> {
    const row = await this.storage.getDraft(id);
    if (!row) throw new CatalogError('catalog.draft-not-found', `there is no draft ${id}`);
    return draftOf(row);
  }

  /**
   * Publishes the draft as a new immutable revision after full validation (every error is
   * reported at once). Publishing a draft whose semantic hash equals the latest revision's
   * returns that revision (`created: false`): a layout-only edit makes no new revision.
   */
  async publish(id: string, options: { expectedDraftRevision: number; by?: string }): Promise<WorkflowRevision & { created: boolean }> {
    const draft = await this.getDraft(id);
    if (draft.draftRevision !== options.expectedDraftRevision) {
      throw new CatalogError('catalog.draft-conflict', `draft ${id} is at draft revision ${draft.draftRevision}, not ${options.expectedDraftRevision}; read it again and retry`);
    }
    const report = await this.options.engine.validate(draft.template);
    const errors: CatalogProblem[] = [...report.errors, ...this.nodeDefinitions.undigestedUses(draft.template)];
    const targets = callTargets(draft.template);
    const published = new Set((await this.storage.getRevisions(targets.filter((t) => t.id !== id))).map((r) => refKey({ id: r.workflow_id, revision: r.revision })));
    for (const target of targets) {
      if (target.id === id) continue;
      if (!published.has(refKey(target))) {
        errors.push({ code: 'catalog.dependency-missing', pointer: target.pointer, message: `workflow ${target.id}@${target.revision} is not published in this catalog` });
      }
    }
    if (errors.length === 0) {
      try {
        await this.compileTemplate(draft.template, draft.lastRevision + 1);
      } catch (err) {
        const e = err as { code?: string; message?: string; detail?: { errors?: CatalogProblem[] } };
        errors.push(...(e.detail?.errors ?? [{ code: e.code ?? 'template.invalid', pointer: '', message: e.message ?? String(err) }]));
      }
    }
    if (errors.length > 0) throw new CatalogError('catalog.publish-invalid', `draft ${id} (draft revision ${draft.draftRevision}) has ${errors.length} error(s); nothing was published`, errors);
    const result = await this.storage.publish({ id, expectedDraftRevision: options.expectedDraftRevision, semanticHash: report.semanticHash!, searchText: searchText(draft.template), at: this.now(), by: options.by ?? 'sdk' });
    if ('conflict' in result) throw new CatalogError('catalog.draft-conflict', `draft ${id} changed to draft revision ${result.conflict} while it was being published`);
    return { ...revisionOf(result.row), created: result.created };
  }

  async getRevision(id: string, revision: number): Promise<WorkflowRevision> {
    const [row] = await this.storage.getRevisions([{ id, revision }]);
    if (!row) throw new CatalogError('catalog.revision-not-found', `workflow ${id}@${revision} is not published in this catalog (or was deleted)`);
    return revisionOf(row);
  }

  async listRevisions(id: string): Promise<WorkflowRevision[]> {
    return (await this.storage.listRevisions(id)).map(revisionOf);
  }

  /** Deletes a revision. Runs that pinned it keep working; new launches of it are refused. */
  async deleteRevision(id: string, revision: number): Promise<void> {
    if (!(await this.storage.deleteRevision(id, revision))) throw new CatalogError('catalog.revision-not-found', `workflow ${id}@${revision} is not published in this catalog`);
  }

  /** Workflows whose id, name, description or labels contain `text` (case-insensitive). */
  async search(text: string): Promise<SearchHit[]> {
    const like = `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return (await this.storage.search(like, searchResultsMax)).map((row) => {
      const latest = row.latest_template ? JSON.parse(row.latest_template.toString('utf8')) : row.draft_template ? JSON.parse(row.draft_template.toString('utf8')) : {};
      const m = latest?.metadata ?? {};
      return {
        id: row.workflow_id,
        ...(typeof m.name === 'string' ? { name: m.name } : {}),
        ...(typeof m.description === 'string' ? { description: m.description } : {}),
        ...(row.draft_revision !== null ? { draftRevision: row.draft_revision } : {}),
        revisions: row.revisions,
      };
    });
  }

  /**
   * `start` and every revision they call, directly or not, breadth first (`start` first). One
   * storage read per level of calls. Throws `catalog.revision-not-found` naming the first
   * missing revision in that order.
   */
  private async closureFrom(start: WorkflowRevision[]): Promise<WorkflowRevision[]> {
    const seen = new Map<string, WorkflowRevision>(start.map((r) => [refKey(r), r]));
    let level = start;
    while (level.length > 0) {
      const wanted = level.flatMap((from) => callTargets(from.template).map((target) => ({ from, target })));
      const refs = new Map<string, RevisionRef>();
      for (const { target } of wanted) if (!seen.has(refKey(target))) refs.set(refKey(target), { id: target.id, revision: target.revision });
      if (refs.size === 0) break;
      const found = new Map((await this.storage.getRevisions([...refs.values()])).map((row) => [refKey({ id: row.workflow_id, revision: row.revision }), row]));
      const next: WorkflowRevision[] = [];
      for (const { from, target } of wanted) {
        const key = refKey(target);
        if (seen.has(key)) continue;
        const row = found.get(key);
        if (!row) throw new CatalogError('catalog.revision-not-found', `workflow ${key}, called by ${from.id}@${from.revision} at ${target.pointer}, is not published in this catalog (or was deleted)`);
        const dep = revisionOf(row);
        seen.set(key, dep);
        next.push(dep);
      }
      level = next;
    }
    return [...seen.values()];
  }

  /**
   * The root revision and the closure of the `workflow.call@1` revisions it calls, from the
   * catalog. Throws `catalog.revision-not-found` naming the first missing revision.
   */
  async closure(id: string, revision: number): Promise<{ root: WorkflowRevision; dependencies: WorkflowRevision[] }> {
    const root = await this.getRevision(id, revision);
    const all = await this.closureFrom([root]);
    return { root, dependencies: all.filter((r) => r !== root) };
  }

  /** Compiles a published revision and its closure into the plan a launch pins. */
  async plan(id: string, revision: number): Promise<ExecutionPlan> {
    const { root, dependencies } = await this.closure(id, revision);
    return this.options.engine.compile(root.template, dependencies.map((d) => ({ template: d.template, revision: d.revision })), root.revision);
  }

  private async compileTemplate(template: unknown, revision: number): Promise<ExecutionPlan> {
    const direct = await this.storage.getRevisions(callTargets(template));
    const deps = await this.closureFrom(direct.map(revisionOf));
    return this.options.engine.compile(template, deps.map((d) => ({ template: d.template, revision: d.revision })), revision);
  }

  /**
   * A revision seen three ways: `schema` (its interface: inputs, outputs, capabilities),
   * `template` (the stored template) or `plan` (the pinned plan a launch would compile now).
   */
  async describe(id: string, revision: number, view: 'schema' | 'template' | 'plan'): Promise<Record<string, unknown>> {
    const r = await this.getRevision(id, revision);
    const head = { id, revision, semanticHash: r.semanticHash, publishedAt: r.publishedAt, publishedBy: r.publishedBy };
    switch (view) {
      case 'template':
        return { ...head, template: r.template };
      case 'plan':
        return { ...head, plan: await this.plan(id, revision) };
      case 'schema': {
        const spec = r.template.spec ?? {};
        return {
          ...head,
          metadata: r.template.metadata,
          inputSchema: spec.inputSchema ?? {},
          outputSchema: spec.outputSchema ?? {},
          outputs: Object.keys(spec.outputs ?? {}).sort(),
          requires: spec.requires ?? [],
          calls: callTargets(r.template).map((t) => `${t.id}@${t.revision}`),
          ...this.customNodesOf(r.template),
        };
      }
      default:
        throw new CatalogError('catalog.bad-view', `view must be schema, template or plan, got ${JSON.stringify(view)}`);
    }
  }

  /** The host's node types a template uses, with their effect (`customNodes`; nothing when it uses none). */
  private customNodesOf(template: any): { customNodes?: { uses: string; capability: string; effect: string; implementationDigest?: string }[] } {
    const nodes: any[] = Array.isArray(template?.spec?.nodes) ? template.spec.nodes : [];
    const used = [...new Set(nodes.map((n) => n?.uses).filter((u): u is string => typeof u === 'string' && this.nodeDefinitions.get(u) !== undefined))].sort();
    if (used.length === 0) return {};
    return {
      customNodes: used.map((uses) => {
        const d = this.nodeDefinitions.get(uses)!;
        return { uses, capability: nodeCapability(uses), effect: d.effect ?? 'unknown', ...(d.implementationDigest ? { implementationDigest: d.implementationDigest } : {}) };
      }),
    };
  }

  /** The semantic difference between two published revisions (layout ignored). */
  async diff(a: RevisionRef, b: RevisionRef): Promise<SemanticDiff> {
    const ra = await this.getRevision(a.id, a.revision);
    const rb = await this.getRevision(b.id, b.revision);
    return {
      from: `${a.id}@${a.revision}`,
      to: `${b.id}@${b.revision}`,
      fromHash: ra.semanticHash,
      toHash: rb.semanticHash,
      same: ra.semanticHash === rb.semanticHash,
      changes: semanticChanges(ra.template, rb.template),
    };
  }
}

const revisionRefPattern = new RegExp(`^(${portableIdSource})@([1-9][0-9]{0,8})$`);

/** Parses `<id>@<revision>`; undefined when the text is not of that form. */
export function parseRevisionRef(text: string): { id: string; revision: number } | undefined {
  const m = revisionRefPattern.exec(text);
  return m ? { id: m[1], revision: Number(m[2]) } : undefined;
}

// ---------------------------------------------------------------------------------------------
// In-flight safety: can this engine and host continue a stored run as pinned?

export interface RunProblem {
  code: string;
  /** `needs_attention`: the run is refused; `warning`: reported, the run may continue. */
  severity: 'needs_attention' | 'warning';
  message: string;
}

export interface RunCompatibility {
  runId: string;
  ok: boolean;
  problems: RunProblem[];
}

/** What the current engine and host support (the engine's `describe()` plus the host's definitions). */
export interface EngineSupport {
  flags: readonly string[];
  checkpointSchemaVersion: number;
  nodeDefinitionSetHash: string;
  /** The implementation digest of a host definition registered now (null: none); undefined when there is no such definition. */
  implementationOf(uses: string): string | null | undefined;
}

/** Compares a stored run's plan and checkpoint with what this engine supports; never guesses. */
export function runCompatibility(runId: string, plan: ExecutionPlan, checkpoint: { checkpointVersion?: unknown } | undefined, support: EngineSupport): RunCompatibility {
  const problems: RunProblem[] = [];
  const unknownFlags = (plan.flags ?? []).filter((f) => !support.flags.includes(f));
  if (plan.planVersion !== 1 || unknownFlags.length > 0) {
    problems.push({ code: 'engine.plan-unsupported', severity: 'needs_attention', message: `run ${runId} pins plan version ${plan.planVersion} with flags this engine does not support: ${unknownFlags.join(', ') || '(none)'}` });
  }
  if (checkpoint && checkpoint.checkpointVersion !== support.checkpointSchemaVersion) {
    problems.push({ code: 'engine.checkpoint-unsupported', severity: 'needs_attention', message: `run ${runId} has checkpoint version ${String(checkpoint.checkpointVersion)}; this engine reads ${support.checkpointSchemaVersion}` });
  }
  for (const [uses, pinned] of Object.entries(plan.nodeDefinitions ?? {})) {
    const present = support.implementationOf(uses);
    if (present === pinned.implementationDigest) continue;
    const has = present === undefined ? 'this host has no such definition' : `this host has ${present ?? 'one without a digest'}`;
    problems.push({ code: 'node.implementation-unavailable', severity: 'needs_attention', message: `run ${runId} pins node type ${uses} with implementation ${pinned.implementationDigest ?? '(no digest)'}; ${has}` });
  }
  if (plan.nodeDefinitionSetHash !== support.nodeDefinitionSetHash) {
    problems.push({ code: 'run.node-definitions-changed', severity: 'warning', message: `run ${runId} was planned with node definition set ${plan.nodeDefinitionSetHash}; the host now has ${support.nodeDefinitionSetHash} (a definition's schema or implementation digest changed)` });
  }
  return { runId, ok: !problems.some((p) => p.severity === 'needs_attention'), problems };
}

/** A stored run this engine must not continue: it needs a person (or a newer program). */
export class RunNeedsAttentionError extends CodedError {
  constructor(
    readonly runId: string,
    readonly problems: RunProblem[],
  ) {
    super('run.needs-attention', `run ${runId} needs attention and was not resumed: ${problems.map((p) => `${p.code}: ${p.message}`).join('; ')}`, { runId, status: 'needs_attention', problems });
    this.name = 'RunNeedsAttentionError';
  }
}

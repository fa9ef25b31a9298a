// Compiles a root template and the closure of its `workflow.call@1` dependencies into a pinned
// execution plan. Resume and replay read only the plan, never "the latest" template.
import { canonicalDigest, canonicalJson, sha256Hex } from '../hash.js';
import { isObject } from '../json.js';
import { nodeDefinitions, nodeKinds } from '../nodes/index.js';
import { hostDefinitions, setHashWithHost, pinnedOf, type HostNodeDefinition } from '../nodes/custom.js';
import type { ExecutionPlan, PinnedNodeDefinition, PlanTemplate } from '../protocol/plan.js';
import type { ValidationError, WorkflowTemplate } from '../protocol/template.js';
import { currentFlags, engineVersion } from '../version.js';
import { validateTemplate, type SyntaxChecker } from './validate.js';
import { CodedError } from '../protocol/coded-error.js';


export interface CompileRequest {
  root: { template: unknown; revision?: number };
  dependencies?: { template: unknown; revision: number }[];
  /**
   * The host's node definitions (nodes/custom.ts). All of them make the plan's
   * `nodeDefinitionSetHash`; those the templates use are pinned in its `nodeDefinitions`.
   */
  nodeDefinitions?: HostNodeDefinition[];
}

export class CompileError extends CodedError {
  constructor(
    code: string,
    message: string,
    readonly errors: ValidationError[],
  ) {
    super(code, message);
    this.name = 'CompileError';
  }
}

/** The semantic hash: SHA-256 of RFC 8785 canonical JSON of the template without `layout`. */
export function semanticHash(template: unknown): string {
  const { layout: _layout, ...semantic } = template as Record<string, unknown>;
  return canonicalDigest(semantic);
}

/**
 * The canonical JSON of a template and its semantic hash, canonicalising it once: without a
 * `layout` the template's canonical JSON is also the semantic one.
 */
function canonicalTemplate(template: unknown): { text: string; semanticHash: string } {
  const text = canonicalJson(template);
  if ((template as Record<string, unknown>).layout === undefined) return { text, semanticHash: `sha256:${sha256Hex(text)}` };
  return { text, semanticHash: semanticHash(template) };
}

/**
 * The plan hash, `canonicalDigest(body)`, with each template's canonical JSON taken from
 * `texts` (by template key) instead of canonicalising it a second time: of RFC 8785's sorted
 * keys, `templates` is the body's last, and `revision`, `semanticHash`, `template` are the
 * order of a template's entry. test/protocol/plan-hash.test.ts checks it against
 * `canonicalDigest` of the whole body.
 */
export function planHashOf(body: Omit<ExecutionPlan, 'planHash'>, texts: ReadonlyMap<string, string>): string {
  const { templates, ...rest } = body;
  const head = canonicalJson(rest);
  const entries = Object.keys(templates)
    .sort()
    .map((key) => {
      const t = templates[key];
      const text = texts.get(key) ?? canonicalJson(t.template);
      return `${canonicalJson(key)}:{${t.revision !== undefined ? `"revision":${canonicalJson(t.revision)},` : ''}"semanticHash":${canonicalJson(t.semanticHash)},"template":${text}}`;
    });
  return `sha256:${sha256Hex(`${head.slice(0, -1)},"templates":{${entries.join(',')}}}`)}`;
}

let definitionSetHash: string | undefined;

/** Computed once; the module's top level runs at build time, so the snapshot already holds it. */
export function nodeDefinitionSetHash(): string {
  if (definitionSetHash === undefined) definitionSetHash = computeNodeDefinitionSetHash();
  return definitionSetHash;
}

function computeNodeDefinitionSetHash(): string {
  const entries = [...nodeDefinitions.values()]
    .map((d) => ({ uses: d.uses, schemaHash: canonicalDigest(d.configSchema), implementationDigest: d.implementationDigest }))
    .sort((a, b) => (a.uses < b.uses ? -1 : a.uses > b.uses ? 1 : 0));
  return canonicalDigest(entries);
}

nodeDefinitionSetHash();

export function templateKey(id: string, revision: number | undefined): string {
  return revision === undefined ? `${id}@inline` : `${id}@${revision}`;
}

function callTargets(template: WorkflowTemplate): { id: string; revision: number }[] {
  const out: { id: string; revision: number }[] = [];
  for (const node of template.spec.nodes) {
    const calls = nodeKinds.get(node.uses)?.calledWorkflows;
    if (calls) out.push(...calls((node.config ?? {}) as Record<string, any>));
  }
  return out.filter((t) => t && typeof t.id === 'string');
}

/** What is wrong with the shape of a compile request: `root.template`, and `dependencies` as a list of `{ template, revision }`. */
function requestProblems(request: CompileRequest): ValidationError[] {
  const problems: ValidationError[] = [];
  if (!isObject(request) || !isObject(request.root) || !('template' in request.root)) {
    problems.push({ code: 'compile.bad-request', pointer: '/root', message: 'a compile request needs root: { template }' });
    return problems;
  }
  const deps: unknown = request.dependencies;
  if (deps === undefined) return problems;
  if (!Array.isArray(deps)) {
    problems.push({ code: 'compile.bad-dependencies', pointer: '/dependencies', message: 'dependencies must be a list of { template, revision }' });
    return problems;
  }
  deps.forEach((d: unknown, i) => {
    if (!isObject(d) || !('template' in d)) problems.push({ code: 'compile.bad-dependencies', pointer: `/dependencies/${i}`, message: 'a dependency must be { template, revision }' });
    else if (!Number.isInteger(d.revision) || (d.revision as number) < 1) problems.push({ code: 'compile.bad-dependencies', pointer: `/dependencies/${i}/revision`, message: `a dependency's revision must be an integer of 1 or more, got ${JSON.stringify(d.revision) ?? 'none'}` });
  });
  return problems;
}

export function compilePlan(request: CompileRequest, checkSyntax: SyntaxChecker): ExecutionPlan {
  const problems = requestProblems(request);
  if (problems.length > 0) throw new CompileError(problems[0].code, `the compile request has ${problems.length} error(s): ${problems[0].message}`, problems);
  const available = new Map<string, { template: unknown; revision: number }>();
  for (const dep of request.dependencies ?? []) {
    const id = (dep.template as WorkflowTemplate)?.metadata?.id;
    if (typeof id === 'string') available.set(templateKey(id, dep.revision), dep);
  }
  const host = hostDefinitions(request.nodeDefinitions);
  if (host.errors.length > 0) throw new CompileError('node.definition-invalid', `the request has ${host.errors.length} invalid node definition(s)`, host.errors);
  const templates: Record<string, PlanTemplate> = {};
  const rootTemplate = request.root.template as WorkflowTemplate;
  const rootErrors = validateTemplate(rootTemplate, checkSyntax, host.kinds);
  if (rootErrors.length > 0) throw new CompileError('template.invalid', `the template has ${rootErrors.length} error(s)`, rootErrors);
  const root = templateKey(rootTemplate.metadata.id, request.root.revision);
  // Each template's canonical JSON, made once for its semantic hash and again used for the plan hash.
  const texts = new Map<string, string>();
  const addTemplate = (key: string, template: WorkflowTemplate, revision: number | undefined) => {
    const canonical = canonicalTemplate(template);
    texts.set(key, canonical.text);
    templates[key] = { template, semanticHash: canonical.semanticHash, revision };
  };
  addTemplate(root, rootTemplate, request.root.revision);

  const queue = [root];
  while (queue.length > 0) {
    const key = queue.shift()!;
    for (const target of callTargets(templates[key].template)) {
      const depKey = templateKey(target.id, target.revision);
      if (templates[depKey]) continue;
      const dep = available.get(depKey);
      if (!dep) {
        throw new CompileError('workflow.dependency-missing', `workflow ${depKey} called by ${key} is not available`, [
          { code: 'workflow.dependency-missing', pointer: '', message: `workflow ${depKey} (called by ${key}) was not provided; publish it or pass it as a dependency` },
        ]);
      }
      const errors = validateTemplate(dep.template, checkSyntax, host.kinds);
      if (errors.length > 0) {
        throw new CompileError('template.invalid', `dependency ${depKey} has ${errors.length} error(s)`, errors.map((e) => ({ ...e, message: `${depKey}: ${e.message}` })));
      }
      addTemplate(depKey, dep.template as WorkflowTemplate, dep.revision);
      queue.push(depKey);
    }
  }
  const depth = callDepth(root, templates);
  if (depth > 16) throw new CompileError('workflow.call-too-deep', `workflow.call nesting is ${depth} deep (at most 16)`, []);
  const pinned = usedDefinitions(templates, host.definitions);
  const body: Omit<ExecutionPlan, 'planHash'> = {
    planVersion: 1 as const,
    engineVersion,
    flags: [...currentFlags],
    nodeDefinitionSetHash: setHashWithHost(nodeDefinitionSetHash(), host.definitions),
    // Absent without host definitions: such a plan is the engine's alone, byte for byte.
    ...(pinned ? { nodeDefinitions: pinned } : {}),
    root,
    templates,
    // A definition without an implementation digest is a development one: what ran cannot be named.
    replayable: !pinned || Object.values(pinned).every((d) => d.implementationDigest !== null),
  };
  return { ...body, planHash: planHashOf(body, texts) };
}

/** The host definitions the plan's templates use, by `uses` (sorted); undefined when none. */
function usedDefinitions(templates: Record<string, PlanTemplate>, definitions: ReadonlyMap<string, HostNodeDefinition>): Record<string, PinnedNodeDefinition> | undefined {
  if (definitions.size === 0) return undefined;
  const used = new Set<string>();
  for (const t of Object.values(templates)) {
    for (const node of t.template.spec.nodes) {
      if (definitions.has(node.uses)) used.add(node.uses);
      // A foreach's body may be of a host type too.
      const body = nodeKinds.get(node.uses)?.callOf?.(node)?.uses;
      if (body !== undefined && definitions.has(body)) used.add(body);
    }
  }
  if (used.size === 0) return undefined;
  return Object.fromEntries([...used].sort().map((uses) => [uses, pinnedOf(definitions.get(uses)!)]));
}

function callDepth(key: string, templates: Record<string, PlanTemplate>, seen: string[] = []): number {
  if (seen.includes(key)) throw new CompileError('workflow.call-cycle', `workflow.call cycle: ${[...seen, key].join(' -> ')}`, []);
  const t = templates[key];
  if (!t) return 0;
  let max = 0;
  for (const target of callTargets(t.template)) max = Math.max(max, callDepth(templateKey(target.id, target.revision), templates, [...seen, key]));
  return 1 + max;
}


// Compiles a root template and the closure of its `workflow.call@1` dependencies into a pinned
// execution plan. Resume and replay read only the plan, never "the latest" template.
import { canonicalDigest } from '../hash.js';
import { nodeDefinitions, nodeKinds } from '../nodes/index.js';
import type { ExecutionPlan, PlanTemplate } from '../protocol/plan.js';
import type { ValidationError, WorkflowTemplate } from '../protocol/template.js';
import { currentFlags, engineVersion } from '../version.js';
import { validateTemplate, type SyntaxChecker } from './validate.js';
import { CodedError } from '../protocol/coded-error.js';


export interface CompileRequest {
  root: { template: unknown; revision?: number };
  dependencies?: { template: unknown; revision: number }[];
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

export function compilePlan(request: CompileRequest, checkSyntax: SyntaxChecker): ExecutionPlan {
  const available = new Map<string, { template: unknown; revision: number }>();
  for (const dep of request.dependencies ?? []) {
    const id = (dep.template as WorkflowTemplate)?.metadata?.id;
    if (typeof id === 'string') available.set(templateKey(id, dep.revision), dep);
  }
  const templates: Record<string, PlanTemplate> = {};
  const rootTemplate = request.root.template as WorkflowTemplate;
  const rootErrors = validateTemplate(rootTemplate, checkSyntax);
  if (rootErrors.length > 0) throw new CompileError('template.invalid', `the template has ${rootErrors.length} error(s)`, rootErrors);
  const root = templateKey(rootTemplate.metadata.id, request.root.revision);
  templates[root] = { template: rootTemplate, semanticHash: semanticHash(rootTemplate), revision: request.root.revision };

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
      const errors = validateTemplate(dep.template, checkSyntax);
      if (errors.length > 0) {
        throw new CompileError('template.invalid', `dependency ${depKey} has ${errors.length} error(s)`, errors.map((e) => ({ ...e, message: `${depKey}: ${e.message}` })));
      }
      templates[depKey] = { template: dep.template as WorkflowTemplate, semanticHash: semanticHash(dep.template), revision: dep.revision };
      queue.push(depKey);
    }
  }
  const depth = callDepth(root, templates);
  if (depth > 16) throw new CompileError('workflow.call-too-deep', `workflow.call nesting is ${depth} deep (at most 16)`, []);
  const body = {
    planVersion: 1 as const,
    engineVersion,
    flags: [...currentFlags],
    nodeDefinitionSetHash: nodeDefinitionSetHash(),
    root,
    templates,
    replayable: true,
  };
  return { ...body, planHash: canonicalDigest(body) };
}

function callDepth(key: string, templates: Record<string, PlanTemplate>, seen: string[] = []): number {
  if (seen.includes(key)) throw new CompileError('workflow.call-cycle', `workflow.call cycle: ${[...seen, key].join(' -> ')}`, []);
  const t = templates[key];
  if (!t) return 0;
  let max = 0;
  for (const target of callTargets(t.template)) max = Math.max(max, callDepth(templateKey(target.id, target.revision), templates, [...seen, key]));
  return 1 + max;
}


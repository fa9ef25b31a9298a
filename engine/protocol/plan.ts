// The pinned execution plan: the canonical templates of a run's whole `workflow.call` closure,
// their hashes, and the engine version and flags it was compiled with.
import type { WorkflowTemplate } from './template.js';

export interface PlanTemplate {
  template: WorkflowTemplate;
  semanticHash: string;
  /** Published revision, when the template came from the catalog. */
  revision?: number;
}

export interface ExecutionPlan {
  planVersion: 1;
  engineVersion: string;
  flags: string[];
  nodeDefinitionSetHash: string;
  /** Key of the root template in `templates`: `<id>@<revision>` or `<id>@inline`. */
  root: string;
  templates: Record<string, PlanTemplate>;
  /** False when the plan holds a definition without an implementation digest. */
  replayable: boolean;
  /** Digest of everything above. */
  planHash: string;
}

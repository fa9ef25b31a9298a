// The pinned execution plan: the canonical templates of a run's whole `workflow.call` closure,
// their hashes, and the engine version and flags it was compiled with.
import type { Json } from '../json.js';
import type { Effect } from './statuses.js';
import type { WorkflowTemplate } from './template.js';

export interface PlanTemplate {
  template: WorkflowTemplate;
  semanticHash: string;
  /** Published revision, when the template came from the catalog. */
  revision?: number;
}

/**
 * A node definition of the host (not built into the engine), as the plan that uses it pins it.
 * Its nodes call the gateway with kind `node`, name `uses`, under capability `node:<name>`.
 */
export interface PinnedNodeDefinition {
  configSchema: Json;
  /** What the effect of a call is: it decides whether an unknown outcome may be retried. */
  effect: Effect;
  /** The implementation's identity; null: a development definition (the plan is not replayable). */
  implementationDigest: string | null;
  /** Checked against each output, when present. */
  outputSchema?: Json;
  label?: string;
}

/** A node definition of the host as a compile or validate request carries it (`nodeDefinitions`). */
export interface HostNodeDefinition {
  /** `vendor.name@1`; never a built-in type. */
  uses: string;
  configSchema: Json;
  /** Default `unknown`. */
  effect?: Effect;
  implementationDigest?: string | null;
  outputSchema?: Json;
  label?: string;
}

export interface ExecutionPlan {
  planVersion: 1;
  engineVersion: string;
  flags: string[];
  nodeDefinitionSetHash: string;
  /** The host's definitions the templates use, by `uses`; absent when they use none. */
  nodeDefinitions?: Record<string, PinnedNodeDefinition>;
  /** Key of the root template in `templates`: `<id>@<revision>` or `<id>@inline`. */
  root: string;
  templates: Record<string, PlanTemplate>;
  /** False when the plan holds a definition without an implementation digest. */
  replayable: boolean;
  /** Digest of everything above. */
  planHash: string;
}

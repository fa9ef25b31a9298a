import type { Json } from '../json.js';

export const apiVersion = 'workflow.gm-hz.dev/v1alpha1';

/** A value binding: exactly one of three sources. */
export type Binding =
  | { source: 'literal'; value: Json }
  | { source: 'input'; path: string }
  | { source: 'output'; nodeId: string; path?: string };

export interface RetryPolicy {
  maxAttempts: number;
  backoffMs?: number;
  backoffMultiplier?: number;
  /** Error codes that retry; every retryable error when absent. */
  retryOn?: string[];
}

export interface NodeSpec {
  id: string;
  uses: string;
  name?: string;
  inputs?: Record<string, Binding>;
  config?: Record<string, Json>;
  /** JSON Schema the node's output must satisfy before it is committed. */
  expects?: Json;
  /** Capabilities the node declares; defaults to the one its configuration implies. */
  requires?: string[];
  retry?: RetryPolicy;
  timeoutMs?: number;
  /** The node only reads: an unknown outcome may be retried. */
  readOnly?: boolean;
}

export interface EdgeSpec {
  from: string;
  to: string;
  /** For `core.condition@1` sources: `true` or `false`. */
  port?: string;
}

export interface WorkflowTemplate {
  apiVersion: typeof apiVersion;
  kind: 'WorkflowTemplate';
  metadata: { id: string; name?: string; description?: string; labels?: Record<string, string>; authority?: string };
  spec: {
    inputSchema?: Json;
    outputSchema?: Json;
    requires?: string[];
    nodes: NodeSpec[];
    edges: EdgeSpec[];
    outputs?: Record<string, Binding>;
    /** `capture` can only narrow the deployment's capture policy, never widen it. */
    policies?: { timeoutMs?: number; capture?: 'metadata' | 'standard' | 'replayable' };
  };
  layout?: Json;
}

/** One validation finding: a stable code, where it is, and what to do. */
export interface ValidationError {
  code: string;
  /** JSON pointer into the template. */
  pointer: string;
  message: string;
}

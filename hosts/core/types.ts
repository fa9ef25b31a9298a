// Plain types shared by every host: what the engine asks for and what comes back.

/** A capability request staged by the engine (see engine/runtime/activation.ts). */
export interface GatewayRequest {
  invocationId: string;
  runId: string;
  nodeId: string;
  item?: number;
  attempt: number;
  kind: 'tool' | 'agent' | 'approval' | 'workflow' | string;
  name: string;
  input: unknown;
  effect: 'read-only' | 'idempotent' | 'unknown' | string;
  config?: Record<string, unknown>;
  deadlineAt?: number;
  reissued?: boolean;
  /** The authority the run acts under when the engine staged this request (not journaled). */
  authority?: Authority;
}

export interface CapabilityError {
  code: string;
  message: string;
  retryable?: boolean;
}

export type CapabilityOutcome = { ok: true; output: unknown } | { ok: false; error: CapabilityError };

/** Facts delivered to a run (inputs of an activation). */
export type Fact =
  | { type: 'run-requested'; input: unknown; authority: Authority; parentRunId?: string; correlation?: unknown; timeoutMs?: number; capture?: 'metadata' | 'standard' | 'replayable' }
  | { type: 'capability-completed'; invocationId: string; ok: boolean; output?: unknown; error?: CapabilityError; artifact?: { digest: string; size: number; mediaType: string; redacted: boolean } }
  | { type: 'cancel-requested'; reason?: string; by?: string }
  | { type: 'resume-requested'; by?: string; authority?: Authority; afterRestart?: boolean; effects?: Record<string, string> }
  | { type: 'outcome-resolved'; nodeId: string; item?: number; resolution: 'succeeded' | 'retry' | 'fail'; output?: unknown; reason?: string; by: string };

export interface Authority {
  id: string;
  scopes: string[];
}

export interface ActivationSummary {
  runId: string;
  status: RunStatus;
  pausedReason?: string;
  seq: number;
  activation: number;
  events: number;
  result?: unknown;
  error?: { code: string; message: string; detail?: unknown };
  wakeAt?: number;
  /** False for a run with capture mode `metadata`: `result` is kept in memory, never in the store. */
  payloadsKept?: false;
}

export type RunStatus = 'accepted' | 'queued' | 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';

export const terminalStatuses: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

export interface ValidationReport {
  ok: boolean;
  errors: { code: string; pointer: string; message: string }[];
  semanticHash?: string;
}

/** A pinned execution plan, as the engine compiles it. */
export interface ExecutionPlan {
  planVersion: number;
  engineVersion: string;
  flags: string[];
  nodeDefinitionSetHash: string;
  root: string;
  templates: Record<string, { template: any; semanticHash: string; revision?: number }>;
  replayable: boolean;
  planHash: string;
}

/** Diagnostics of a host; never a source of facts. */
export interface HostLog {
  (level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
}

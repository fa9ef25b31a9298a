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

/**
 * What the engine says of a run after each activation (engine/runtime/projection.ts): stores keep
 * it beside the run's status, and hosts, operators, recovery and the replay page read it instead
 * of the run's events. Empty lists are absent.
 */
export interface RunProjection {
  /** Absent from projections stored before it was part of them (the store's status column is authoritative). */
  status?: string;
  pausedReason?: string;
  result?: unknown;
  error?: { code: string; message: string; detail?: unknown };
  /** The next time (ms) the run wants an activation without any new fact. */
  wakeAt?: number;
  /** Approvals waiting for a person: who may decide (`approvers`, absent: anyone) and what they are asked. */
  approvals?: { nodeId: string; item?: number; invocationId: string; attempt: number; approvers?: unknown; prompt?: unknown }[];
  /** Every call in flight, approvals included, with the effect class recovery decides by. */
  calls?: { invocationId: string; nodeId: string; item?: number; attempt: number; kind: string; name: string; effect: string; /** Seq of its `capability.requested` event. */ requestedSeq: number }[];
  /** Nodes (and foreach items) whose outcome is unknown, waiting for an operator's resolution. */
  attention?: { nodeId: string; item?: number }[];
}

export interface ActivationSummary extends RunProjection {
  runId: string;
  status: RunStatus;
  seq: number;
  activation: number;
  events: number;
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

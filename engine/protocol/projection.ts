// The projection of a run: what hosts need to know about it without reading its events. The
// engine computes it after every activation (engine/runtime/projection.ts) and with `inspect`;
// the activation summary carries it, and hosts store it beside the run's status. Empty lists are
// absent. `J` is how a host sees JSON values it has not checked (`unknown`); the engine's is `Json`.
import type { CapabilityKind } from './gateway.js';
import type { Effect, PausedReason, RunStatus } from './statuses.js';

/** A `human.approval@1` call waiting for a person's decision. */
export interface WaitingApproval<J = unknown> {
  nodeId: string;
  item?: number;
  invocationId: string;
  attempt: number;
  /** From the node's config: who may decide (absent: anyone), and what they are asked. */
  approvers?: J;
  prompt?: J;
}

/**
 * A call the engine requested whose outcome is not recorded yet (approvals included): its effect
 * class says what recovery may do with it, `requestedSeq` where its recorded input is.
 */
export interface CallInFlight {
  invocationId: string;
  nodeId: string;
  item?: number;
  attempt: number;
  kind: CapabilityKind;
  name: string;
  effect: Effect;
  requestedSeq: number;
}

/** A node (or foreach item) whose outcome is unknown, waiting for an operator's resolution. */
export interface NeedsAttention {
  nodeId: string;
  item?: number;
}

/** Tokens and model turns of a run's agent loops, every attempt counted (what was billed). */
export interface AgentUsage {
  inputTokens: number;
  outputTokens: number;
  turns: number;
  /** The same, per agent node. */
  nodes: Record<string, { inputTokens: number; outputTokens: number; turns: number }>;
}

export interface RunProjection<J = unknown> {
  status: RunStatus;
  pausedReason?: PausedReason;
  /** The run's output (never kept by a host for a `metadata` run). */
  result?: J;
  /** The run's error (`ErrorInfo`). */
  error?: { code: string; message: string; retryable?: boolean; detail?: J };
  /** The next time (ms, run clock) the run wants an activation without any new fact. */
  wakeAt?: number;
  approvals?: WaitingApproval<J>[];
  calls?: CallInFlight[];
  attention?: NeedsAttention[];
  /** Absent for a run without agent loops. */
  usage?: AgentUsage;
}

// The state of a run as `reduce` folds it from the journal; a checkpoint is this object as JSON.
import type { Json } from '../json.js';
import type { AgentMessage, TokenUsage } from '../protocol/agent.js';
import type { Authority } from '../protocol/authority.js';
import type { ErrorInfo } from '../protocol/events.js';
import type { AgentUsage, CallInFlight } from '../protocol/projection.js';
import type { EdgeStatus, Effect, NodeStatus, PausedReason, RunStatus } from '../protocol/statuses.js';

/** An invocation in flight, as the run's projection lists it. */
export type Invocation = CallInFlight;

export interface ForeachState {
  items: Json[];
  maxConcurrency: number;
  failurePolicy: 'fail-fast' | 'continue';
  next: number;
  running: number;
  done: number;
  results: Json[];
  failures: { index: number; error: ErrorInfo }[];
  attempts: Record<string, number>;
  /** Items whose outcome is unknown after a restart, waiting for an operator. */
  unknown: number[];
}

/** The conversation and usage of an agent loop's current attempt, folded from its node events. */
export interface AgentState {
  /** Model turns answered so far. */
  turn: number;
  /** The conversation after the node's input (which is rebuilt from its bindings). */
  messages: AgentMessage[];
  usage: TokenUsage;
  /** Tool calls of the latest turn whose outcome is unknown (after a restart or a time limit). */
  unknown?: { invocationId: string; effect: Effect }[];
}

export interface NodeState {
  status: NodeStatus;
  attempt: number;
  output?: Json;
  error?: ErrorInfo;
  invocationId?: string;
  timeoutAt?: number;
  retryAt?: number;
  foreach?: ForeachState;
  agent?: AgentState;
}

/** The whole state of a run; a checkpoint is this object as JSON. */
export interface RunState {
  checkpointVersion: 1;
  runId: string;
  templateKey: string;
  planHash: string;
  status: RunStatus;
  pausedReason?: PausedReason;
  seq: number;
  /** Ordinal of the activation that committed the latest events. */
  activation: number;
  /**
   * The run clock: the latest `occurredAt` of the run's events, in ms. With `clock-v2` an
   * activation never takes an earlier time. Absent from checkpoints written before it existed.
   */
  clock?: number;
  lastCheckpointSeq: number;
  input: Json;
  /** `metadata` (`capture-v2`): the journal and checkpoints of this run hold no payloads. */
  capture?: 'metadata';
  authority: Authority;
  parentRunId?: string;
  /** Correlation given at launch; every event of the run carries it. */
  correlation?: Json;
  deadlineAt?: number;
  cancelRequested?: boolean;
  nodes: Record<string, NodeState>;
  edges: Record<string, EdgeStatus>;
  inflight: Record<string, Invocation>;
  /** Derived indexes, kept by `reduce` so an activation never scans every node. */
  counts: Record<NodeStatus, number>;
  /** Nodes with a time limit or a retry time pending. */
  timed: Record<string, true>;
  result?: Json;
  error?: ErrorInfo;
  /** Usage of the run's agent loops; absent until a model turn is journaled. */
  usage?: AgentUsage;
}

// Every journal event the engine writes, with its payload. `Activation.emit` takes only these
// types and payloads, and `reduce` switches on this union: an event type the engine never emits
// (or a payload member it never writes) is a compile error wherever it is read.
//
// Under capture mode `metadata` (`capture-v2`) the journal holds the same events, with the member
// that carries run data (`input` or `output`, see `payloadMembers` in runtime/activation.ts)
// replaced by `<member>Digest` and `<member>Bytes`, and a foreach's `items` by `itemsDigest` and
// `itemsCount`. Those members are declared optional below for that reason.
import type { Json } from '../json.js';
import type { AgentMessage, TokenUsage } from './agent.js';
import type { Authority } from './authority.js';
import type { CapabilityKind } from './gateway.js';
import type { Effect, PausedReason } from './statuses.js';

/**
 * An error as the engine records it: a stable code, a message, whether a retry may help. A type
 * (not an interface) so that it is itself a `Json` value and nests in `detail` and outputs.
 */
export type ErrorInfo = {
  code: string;
  message: string;
  retryable?: boolean;
  detail?: Json;
};

/** The digest and size that replace a payload member of a `metadata` run. */
interface WithoutOutput {
  outputDigest?: string;
  outputBytes?: number;
}

/** How a capability call ended, as `capability.completed` and `capability.late` record it. */
export type CapabilityResult =
  | ({ ok: true; output?: Json; artifact?: ArtifactRef } & WithoutOutput)
  | { ok: false; error: ErrorInfo };

/**
 * What the host's own records (a router's receipts) say about a call whose outcome is unknown
 * after a restart: `claimed` — the attempt was claimed but no start was recorded (the process may
 * or may not have been forked: a crash between the fork and the start receipt leaves exactly
 * this); `started` — a process was started (its pid) and ended without a completion record;
 * `stopped` — it was started and stopped unfinished when the host shut down.
 */
export interface AttemptEvidence {
  stage: 'claimed' | 'started' | 'stopped';
  pid?: number;
  /** Milliseconds since the epoch, host clock. */
  claimedAt?: number;
  startedAt?: number;
  detail?: string;
}

/** A captured (or redacted) capability payload, stored by the host under its digest. */
export interface ArtifactRef {
  digest: string;
  size: number;
  mediaType: string;
  redacted: boolean;
}

/** What `node.started` of a `core.foreach@1` node records about its items. */
export interface ForeachStart {
  /** Absent for a `metadata` run, which records `itemsDigest` and `itemsCount` instead. */
  items?: Json[];
  itemsDigest?: string;
  itemsCount?: number;
  maxConcurrency: number;
  failurePolicy: 'fail-fast' | 'continue';
}

export interface EdgeDecision {
  /** Index into the template's `spec.edges`. */
  edge: number;
  from: string;
  to: string;
  port?: string;
}

/** Event type -> its payload. */
export interface EventPayloads {
  'run.accepted': {
    input?: Json;
    inputDigest?: string;
    inputBytes?: number;
    authority: Authority;
    templateKey: string;
    planHash: string;
    parentRunId?: string;
    deadlineAt?: number;
    nodeIds: string[];
    capture?: 'metadata';
  };
  /** A background run: when its host queued it for a worker (right after `run.accepted`). */
  'run.queued': { queuedAt: string };
  'run.started': Record<string, never>;
  'run.paused': { reason: PausedReason };
  /** `by` is set when a person or a host asked for it (a fact); `reason` when the engine decided it. */
  'run.resumed': { reason?: string; by?: string; authority?: Authority; afterRestart?: true; effects?: Record<string, string>; attempts?: Record<string, AttemptEvidence> };
  'run.cancel-requested': { reason: string; by: string };
  'run.cancelled': { reason: string; by: string };
  'run.completed': { output?: Json } & WithoutOutput;
  'run.failed': { error: ErrorInfo };

  'node.started': { timeoutAt?: number; foreach?: ForeachStart };
  'node.waiting': { reason: 'approval' };
  'node.output-committed': { output?: Json } & WithoutOutput;
  'node.failed': { error: ErrorInfo };
  'node.skipped': Record<string, never>;
  'node.retry-scheduled': { error: ErrorInfo; retryAt: number };
  'node.needs-attention': { invocationId: string; item?: number; evidence: { kind: CapabilityKind; name: string; effect: Effect; requestedSeq: number; reason?: 'timeout' | 'unavailable'; attempt?: AttemptEvidence } };
  'node.resolved': { resolution: Resolution; by: string; reason?: string; output?: Json; item?: number; attentionSeq?: number } & WithoutOutput;
  'node.resumed': { reason?: string; by?: string };
  'node.cancelled': { reason: string };
  'node.item-started': { index: number };
  'node.item-committed': { index: number; output?: Json; fromUnknown?: true } & WithoutOutput;
  'node.item-failed': { index: number; error: ErrorInfo; final: boolean; fromUnknown?: true };
  /**
   * The agent loop (docs/agents.md): what a model turn answered (`message`, journaled again here
   * so the conversation folds from node events alone, whatever the gateway captured as an
   * artifact), a tool call's result or refusal, a final answer that failed its `outputSchema`.
   */
  'node.agent-turn': { turn: number; message?: Extract<AgentMessage, { role: 'assistant' }>; usage: TokenUsage; finishReason: string } & { messageDigest?: string; messageBytes?: number };
  'node.agent-tool-result': { turn: number; toolCallId: string; toolName: string; output?: Json; error?: { code: string; message: string }; refused?: true } & WithoutOutput;
  'node.agent-answer-invalid': { turn: number; problem: string };

  'capability.requested': { invocationId: string; kind: CapabilityKind; name: string; effect: Effect; input?: Json; inputDigest?: string; inputBytes?: number; item?: number; reissued?: true };
  'capability.completed': { invocationId: string } & CapabilityResult;
  /** Evidence only: a duplicate, or an outcome after the call was cancelled or the run ended. */
  'capability.late': { invocationId: string; reason: string } & CapabilityResult;
  'capability.cancelled': { invocationId: string; reason: string };
  'capability.abandoned': { invocationId: string; reason: string };

  'edge.taken': EdgeDecision;
  'edge.skipped': EdgeDecision;

  'checkpoint.committed': { checkpointVersion: number };
}

export type EventType = keyof EventPayloads;
export type PayloadOf<T extends EventType> = EventPayloads[T];
export type Resolution = 'succeeded' | 'retry' | 'fail';

/** The node an event is about. */
export interface EventNode {
  id: string;
  uses: string;
  attempt: number;
  invocationId?: string;
  item?: number;
}

/** The envelope every event shares; members in the order the journal's text has them. */
export interface EnvelopeFields {
  schemaVersion: number;
  eventId: string;
  runId: string;
  seq: number;
  /** ISO-8601 time taken from the activation's `now`. */
  occurredAt: string;
  workflow: { id: string; revision?: number; semanticHash: string; engineVersion: string; nodeDefinitionSetHash: string };
  node?: EventNode;
  correlation?: Json;
  origin: { actor: string; activation: number };
}

/** One journal event; narrowing on `type` narrows `payload`. */
export type EventEnvelope<T extends EventType = EventType> = { [K in T]: EnvelopeFields & { type: K; payload: EventPayloads[K] } }[T];

/** Event types that change a run's status (see state/transitions.ts). */
export type RunEventType = Extract<EventType, `run.${string}`>;
/** Event types that change a node's status. */
export type NodeEventType = Extract<EventType, `node.${string}`>;

// Facts: the inputs of an activation, in the past tense. Generic over the type of JSON values so
// hosts can hand in values they have not checked (`unknown`); the engine reads them as `Json`
// and checks what it keeps.
import type { Json } from '../json.js';
import type { Authority } from './authority.js';
import type { ArtifactRef, AttemptEvidence, Resolution } from './events.js';

/** The capture mode a deployment asks for; a template's `policies.capture` can only narrow it. */
export type CaptureMode = 'metadata' | 'standard' | 'replayable';

/** An error a capability reported. */
export interface CapabilityError {
  code: string;
  message: string;
  retryable?: boolean;
}

export type Fact<J = Json> =
  | {
      type: 'run-requested';
      input: J;
      authority: Authority;
      parentRunId?: string;
      correlation?: J;
      timeoutMs?: number;
      /** The deployment's capture mode, narrowed by the plan's templates (`capture-v2`). */
      capture?: CaptureMode;
      /** When the host queued the run for a worker (ms since the epoch): journaled as `run.queued`. */
      queuedAt?: number;
    }
  | { type: 'capability-completed'; invocationId: string; ok: boolean; output?: J; error?: CapabilityError; artifact?: ArtifactRef }
  /**
   * The host did not carry out the call and cannot (the implementation of a host node definition
   * the run pinned is not this host's): nothing happened, and the node needs a person, who may
   * ask again where the implementation is (`resolve --retry`), fail it or give its output.
   */
  | { type: 'capability-unavailable'; invocationId: string; reason: string }
  | { type: 'cancel-requested'; reason?: string; by?: string }
  | {
      type: 'resume-requested';
      by?: string;
      authority?: Authority;
      afterRestart?: boolean;
      effects?: Record<string, string>;
      /** With `afterRestart`: what the host's records say of calls in flight (by invocation id); kept in the `needs-attention` evidence. */
      attempts?: Record<string, AttemptEvidence>;
    }
  | { type: 'outcome-resolved'; nodeId: string; item?: number; resolution: Resolution; output?: J; reason?: string; by: string; /** The unknown decided on: its `node.needs-attention` seq (refused as `resolve.stale` when the node's is newer). */ attentionSeq?: number };

export type FactType = Fact['type'];
export type FactOf<T extends FactType, J = Json> = Extract<Fact<J>, { type: T }>;

export interface ActivationRequest<J = Json> {
  runId: string;
  /** Milliseconds since the epoch; the only clock the engine knows. */
  now: number;
  facts: Fact<J>[];
  /** Who caused this activation (`host`, `operator:<name>`, ...). */
  actor?: string;
  correlation?: J;
  /**
   * The most bytes (UTF-8) of events one commit of this activation may hold. A completed call
   * whose output would take the commit past it is recorded as failed with `run.commit-too-large`;
   * an activation whose events exceed it all the same is refused with that code. No bound when
   * absent (the Node host sends its `commitBytesMax`).
   */
  commitBytesMax?: number;
}

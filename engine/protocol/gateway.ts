// What the engine asks of a gateway, and what comes back (as a `capability-completed` fact).
import type { Json } from '../json.js';
import type { Authority } from './authority.js';
import type { CapabilityError } from './facts.js';
import type { Effect } from './statuses.js';

/** `node`: a node of a definition the host registered (its `name` is the node's `uses`). */
export type CapabilityKind = 'tool' | 'agent' | 'approval' | 'workflow' | 'model' | 'node';

/** A capability request staged by the engine; the host carries it out after the commit. */
export interface GatewayRequest<J = Json> {
  invocationId: string;
  runId: string;
  nodeId: string;
  item?: number;
  attempt: number;
  kind: CapabilityKind;
  name: string;
  input: J;
  effect: Effect;
  config?: Record<string, J>;
  deadlineAt?: number;
  reissued?: boolean;
  /**
   * The authority the run acts under at the moment the request is staged (resolved again at
   * every resume and operator command). Not journaled: `capability.requested` is unchanged, so
   * a request a host rebuilds from the journal has none.
   */
  authority?: Authority;
}

/**
 * A call's outcome. `unavailable`: the host did not carry the call out and cannot (it lacks the
 * implementation the run pinned); the run is told so (`capability-unavailable`) instead of a
 * failure, and the node needs a person.
 */
export type CapabilityOutcome<J = unknown> = { ok: true; output: J } | { ok: false; error: CapabilityError; unavailable?: true };

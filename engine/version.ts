/** The engine's version; recorded in every plan and event. */
export const engineVersion = '0.1.0';

/**
 * Behaviour flags that affect replay. A plan records the flags it was compiled with; an engine
 * refuses (needs_attention) a run whose flags it does not support. A run is decided by the flags
 * of its plan, so a run recorded before a flag existed replays with the behaviour it had.
 *
 * - `ids-v2`: invocation and event ids from a fast non-cryptographic hash (before: SHA-256).
 * - `effects-v2`: a call whose effect is `unknown` is never retried on a time limit (the node
 *   becomes needs-attention, as after a crash) nor on an error without `retryable: true`.
 * - `errors-v2`: errors the engine builds from a capability's error carry no `undefined`
 *   members, so the state holds exactly what the journal holds (before: a foreach with
 *   `failurePolicy: continue` failed its own output check live, and not after a restart).
 * - `clock-v2`: the run clock never goes backwards: an activation's time is the later of the
 *   host's `now` and the time of the run's previous activation.
 * - `inputs-v2`: `default`s of `spec.inputSchema` are applied to the run input before it is
 *   validated, and `run.accepted` records the input with them.
 * - `bindings-v2`: a binding to a path that a completed node's output does not have fails the
 *   node (`binding.missing`) instead of leaving the input out.
 * - `capture-v2`: a run launched with capture mode `metadata` keeps no payloads in the journal:
 *   events carry `<key>Digest` and `<key>Bytes` instead of the run input, call inputs and
 *   outputs, node and item outputs, foreach items and the run output; checkpoints hold none.
 *   The payloads live in the hot run only: a cold rebuild of such a run fails it with
 *   `run.payloads-not-kept`, and recorded replay refuses it (`replay.payloads-not-kept`).
 * - `authority-v2`: a safe call reissued after a restart or takeover is checked against the
 *   authority of that resume first; one it no longer grants is cancelled and fails its node (or
 *   item) with `capability.denied` instead of running under the authority of launch.
 * - `checkpoint-v2`: the interval between checkpoints grows with the run: an eighth of the
 *   events before the previous checkpoint, at least 512 and at most 8,192 (before: every 512
 *   events, so the checkpoints of the whole state cost a long run the square of its length).
 * - `agents-v2`: an `agent.run@1` with a `model` runs as a loop in the engine (docs/agents.md):
 *   model turns and tool calls are invocations of their own, journaled with `node.agent-*`
 *   events. An engine without the flag refuses such a plan instead of running it as one call.
 * - `resolve-v2`: a resolution names the unknown it was decided on (`attentionSeq`, the seq of the
 *   node's latest `node.needs-attention`, journaled in `node.resolved`): naming another is refused
 *   (`resolve.stale`), and naming is required for an unknown that came after an earlier
 *   resolution of the node (`resolve.unknown-unnamed`).
 * - `checkpoint-v3`: a run that ends takes no checkpoint for ending (one that pauses still does):
 *   an ended run is read again only for late evidence and inspection, which fold the events after
 *   its last checkpoint, fewer than one interval of them. Serialising the whole state at the end
 *   was a tenth of a short agent run's engine time, and its bytes a part of the run's last commit.
 */
export const supportedFlags = ['checkpoint-v1', 'events-v1', 'ids-v2', 'effects-v2', 'errors-v2', 'clock-v2', 'inputs-v2', 'bindings-v2', 'capture-v2', 'authority-v2', 'checkpoint-v2', 'agents-v2', 'resolve-v2', 'checkpoint-v3'] as const;

/** The flags a plan compiled by this engine records. */
export const currentFlags = ['checkpoint-v1', 'events-v1', 'ids-v2', 'effects-v2', 'errors-v2', 'clock-v2', 'inputs-v2', 'bindings-v2', 'capture-v2', 'authority-v2', 'checkpoint-v2', 'agents-v2', 'resolve-v2', 'checkpoint-v3'] as const;

export type EngineFlag = (typeof supportedFlags)[number];

/** The schema version of events and checkpoints written by this engine. */
export const eventSchemaVersion = 1;
export const checkpointSchemaVersion = 1;

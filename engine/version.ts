/** The engine's version; recorded in every plan and event. */
export const engineVersion = '0.1.0';

/**
 * Behaviour flags that affect replay. A plan records the flags it was compiled with; an engine
 * refuses (needs_attention) a run whose flags it does not support.
 *
 * - `ids-v2`: invocation and event ids from a fast non-cryptographic hash (before: SHA-256).
 */
export const supportedFlags = ['checkpoint-v1', 'events-v1', 'ids-v2'] as const;

/** The flags a plan compiled by this engine records. */
export const currentFlags = ['checkpoint-v1', 'events-v1', 'ids-v2'] as const;

/** The schema version of events and checkpoints written by this engine. */
export const eventSchemaVersion = 1;
export const checkpointSchemaVersion = 1;

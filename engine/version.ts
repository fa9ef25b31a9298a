/** The engine's version; recorded in every plan and event. */
export const engineVersion = '0.1.0';

/**
 * Behaviour flags that affect replay. A plan records the flags it was compiled with; an engine
 * refuses (needs_attention) a run whose flags it does not support.
 */
export const supportedFlags = ['checkpoint-v1', 'events-v1'] as const;

/** The schema version of events and checkpoints written by this engine. */
export const eventSchemaVersion = 1;
export const checkpointSchemaVersion = 1;

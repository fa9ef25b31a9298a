/** Every bound of the engine, with its unit last. */
export const limits = {
  templateBytesMax: 1_048_576,
  nodesMax: 2_000,
  edgesMax: 8_000,
  /** Portable ids (see protocol/ids.ts): an ASCII letter or digit, then letters, digits and `._:-`. */
  idLengthMax: 36,
  /** Nesting of `workflow.call@1` closures. */
  callDepthMax: 16,
  runInputBytesMax: 1_048_576,
  nodeOutputBytesMax: 1_048_576,
  nodeOutputDepthMax: 64,
  foreachItemsMax: 100_000,
  foreachItemsDefault: 1_000,
  foreachConcurrencyMax: 256,
  foreachConcurrencyDefault: 4,
  attemptsMax: 20,
  retryBackoffMsMax: 86_400_000,
  timeoutMsMax: 31 * 86_400_000,
  /** A checkpoint is taken when this many events followed the previous one (or the run pauses or ends). */
  checkpointEveryEvents: 512,
  /**
   * With `checkpoint-v2` the interval grows with the run: an eighth of the events before the
   * previous checkpoint, between `checkpointEveryEvents` and `checkpointIntervalMax`. A checkpoint
   * holds the whole state, which grows with the run: at a fixed interval a long run's checkpoints
   * cost the square of its length.
   */
  checkpointIntervalDivisor: 8,
  checkpointIntervalMax: 8_192,
  /** Runs held hot in one engine instance before the least recently used is evicted. */
  hotRunsMax: 256,
  scriptSourceBytesMax: 65_536,
  /** Fuel is counted in QuickJS interrupt-handler calls (about 10,000 interpreter steps each). */
  scriptFuelDefault: 1_000,
  scriptFuelMax: 100_000,
  scriptMemoryBytesDefault: 33_554_432,
  scriptMemoryBytesMax: 268_435_456,
  scriptStackBytesDefault: 65_536,
  scriptOutputBytesDefault: 1_048_576,
  errorMessageCharsMax: 2_000,
  /** Model turns of an agent loop when its `maxTurns` is absent, and the most it may ask for. */
  agentTurnsDefault: 10,
  agentTurnsMax: 200,
  /** Entries of an agent's `tools` and `skills` allow-lists. */
  agentAllowListEntriesMax: 128,
  /** Tool calls one model turn may ask for; a turn that asks for more fails the node. */
  agentToolCallsPerTurnMax: 64,
  /**
   * Characters of an agent's conversation (canonical JSON of its messages) when a turn is asked
   * for: the conversation lives in the run's state and every checkpoint holds it.
   */
  agentConversationCharsMax: 4_194_304,
  /** Characters of a tool call id a model chose (it is journaled and sent back to the model). */
  agentToolCallIdCharsMax: 256,
} as const;

/**
 * The bounds of one script evaluation (the WIT record `script-limits`): the engine asks for them,
 * every host's sandbox applies them (sandbox/script-limits.ts checks their ranges).
 */
export interface ScriptLimits {
  /** Interrupt-handler calls (one per ~10 000 interpreter polls). */
  fuel: number;
  /** Linear memory the evaluation may grow its module by (beyond its initial 16 MiB). */
  memoryBytes: number;
  /** QuickJS stack bytes (at most 64 KiB, see sandbox/limits.ts). */
  stackBytes: number;
  /** UTF-8 bytes of the output JSON text. */
  outputBytes: number;
}

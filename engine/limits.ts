/** Every bound of the engine, with its unit last. */
export const limits = {
  templateBytesMax: 1_048_576,
  nodesMax: 2_000,
  edgesMax: 8_000,
  /** Portable ids: `[A-Za-z0-9][A-Za-z0-9._:-]{0,35}`. */
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
} as const;

/** The bounds of one script evaluation (the WIT record `script-limits`); every host applies them. */
export interface ScriptLimits {
  /** Interrupt-handler ticks (see `scriptFuelDefault`). */
  fuel: number;
  memoryBytes: number;
  stackBytes: number;
  outputBytes: number;
}

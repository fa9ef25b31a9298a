import type { RunProjection } from './projection.js';

/** What `activate` answers: the run's projection after the activation, and where its journal stands. */
export interface ActivationSummary<J = unknown> extends RunProjection<J> {
  runId: string;
  seq: number;
  activation: number;
  events: number;
  /** False for a `metadata` run: the host keeps `result` in memory only, out of its projection. */
  payloadsKept?: false;
}

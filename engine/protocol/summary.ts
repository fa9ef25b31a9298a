import type { PausedReason, RunStatus } from './statuses.js';

/** What `activate` answers: the run's status after the activation, and when to wake it. */
export interface ActivationSummary<J = unknown> {
  runId: string;
  status: RunStatus;
  pausedReason?: PausedReason;
  seq: number;
  activation: number;
  events: number;
  result?: J;
  /** The run's error (`ErrorInfo`); hosts read `detail` as a value they have not checked. */
  error?: { code: string; message: string; retryable?: boolean; detail?: J };
  wakeAt?: number;
  /** False for a `metadata` run: the host keeps `result` in memory only, out of its projection. */
  payloadsKept?: false;
}

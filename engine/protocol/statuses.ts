// The statuses of runs and nodes, and the values that name an effect or an error. The engine and
// every host read them from here.

export type RunStatus = 'accepted' | 'queued' | 'running' | 'paused' | 'completed' | 'failed' | 'cancelled';
export type TerminalRunStatus = 'completed' | 'failed' | 'cancelled';
export type PausedReason = 'approval' | 'waiting' | 'needs_attention';
export type NodeStatus = 'pending' | 'running' | 'waiting' | 'retry-wait' | 'needs-attention' | 'completed' | 'failed' | 'skipped' | 'cancelled';
export type EdgeStatus = 'taken' | 'skipped';
/** How an external call may be treated on recovery and replay. */
export type Effect = 'read-only' | 'idempotent' | 'unknown';

/** A run in one of these statuses never changes again. */
export const terminalRunStatuses: readonly TerminalRunStatus[] = ['completed', 'failed', 'cancelled'];

const terminal: ReadonlySet<string> = new Set(terminalRunStatuses);

/** Whether a run status (or a status text read from a store) is terminal. */
export function isTerminalStatus(status: string): status is TerminalRunStatus {
  return terminal.has(status);
}

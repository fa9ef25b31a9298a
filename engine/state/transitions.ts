// Every legal state change of runs and nodes, as tables. An event that a table does not allow
// fails loudly with the state, the event and its seq.
import type { NodeEventType, RunEventType } from '../protocol/events.js';
import type { NodeStatus, RunStatus } from '../protocol/statuses.js';

/** Run event type -> statuses it may arrive in -> status after it (`same` keeps the status). */
export const runTransitions: Record<RunEventType, { from: readonly (RunStatus | 'new')[]; to: RunStatus | 'same' }> = {
  'run.accepted': { from: ['new'], to: 'queued' },
  'run.queued': { from: ['queued'], to: 'same' },
  'run.started': { from: ['queued'], to: 'running' },
  'run.paused': { from: ['running', 'paused'], to: 'paused' },
  'run.resumed': { from: ['paused', 'running'], to: 'running' },
  'run.cancel-requested': { from: ['queued', 'running', 'paused'], to: 'same' },
  'run.completed': { from: ['running'], to: 'completed' },
  'run.failed': { from: ['queued', 'running', 'paused'], to: 'failed' },
  'run.cancelled': { from: ['queued', 'running', 'paused'], to: 'cancelled' },
};

const active: readonly NodeStatus[] = ['running', 'waiting'];

/** Node event type -> statuses it may arrive in -> status after it. */
export const nodeTransitions: Record<NodeEventType, { from: readonly NodeStatus[]; to: NodeStatus | 'same' }> = {
  'node.started': { from: ['pending', 'retry-wait', 'needs-attention'], to: 'running' },
  'node.waiting': { from: ['running'], to: 'waiting' },
  'node.output-committed': { from: [...active, 'needs-attention'], to: 'completed' },
  'node.failed': { from: [...active, 'needs-attention', 'retry-wait', 'pending'], to: 'failed' },
  'node.skipped': { from: ['pending'], to: 'skipped' },
  'node.retry-scheduled': { from: active, to: 'retry-wait' },
  'node.needs-attention': { from: [...active, 'needs-attention'], to: 'needs-attention' },
  'node.resolved': { from: ['needs-attention'], to: 'same' },
  'node.resumed': { from: ['needs-attention'], to: 'running' },
  'node.cancelled': { from: [...active, 'retry-wait', 'needs-attention', 'pending'], to: 'cancelled' },
  'node.item-started': { from: [...active, 'needs-attention'], to: 'same' },
  'node.item-committed': { from: [...active, 'needs-attention'], to: 'same' },
  'node.item-failed': { from: [...active, 'needs-attention'], to: 'same' },
  'node.agent-turn': { from: ['running'], to: 'same' },
  // A tool's result may settle while another call of the same turn left the node needs-attention.
  'node.agent-tool-result': { from: ['running', 'needs-attention'], to: 'same' },
  'node.agent-answer-invalid': { from: ['running'], to: 'same' },
};

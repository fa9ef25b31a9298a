// Operator actions shared by every host that accepts them. What a run waits for is read from its
// projection (the engine's, stored with its last commit), never from its events.
import type { RunProjection } from './types.js';
import { CodedError } from '../../engine/protocol/coded-error.js';

export class OperatorError extends CodedError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = 'OperatorError';
  }
}

type WaitingApproval = NonNullable<RunProjection['approvals']>[number];

/**
 * The approval node `nodeId` of a run waits for, by its projection; with `by`, also checks that
 * `by` is one of the node's approvers (a node without approvers may be decided by anyone).
 */
export function pendingApproval(projection: RunProjection, runId: string, nodeId: string, by?: string): WaitingApproval {
  const approval = projection.approvals?.find((a) => a.nodeId === nodeId);
  if (!approval) throw new OperatorError('approval.not-pending', `node ${nodeId} of run ${runId} is not waiting for an approval`);
  const approvers = approval.approvers;
  if (by !== undefined && Array.isArray(approvers) && approvers.length > 0 && !approvers.includes(by)) {
    throw new OperatorError('approval.not-allowed', `${JSON.stringify(by)} may not decide ${nodeId} of run ${runId}; its approvers are ${approvers.map((a) => JSON.stringify(a)).join(', ')}`);
  }
  return approval;
}

/** The fact that records an approval decision. */
export function approvalFact(invocationId: string, decision: { approved: boolean; by: string; comment?: string }) {
  return {
    type: 'capability-completed' as const,
    invocationId,
    ok: true,
    output: { approved: decision.approved, by: decision.by, ...(decision.comment !== undefined ? { comment: decision.comment } : {}) },
  };
}

/** What an operator says of a node (or foreach item) whose outcome is unknown. */
export interface Resolution {
  by: string;
  /** The node (or foreach item) succeeded with this output. */
  succeeded?: unknown;
  /** Run it again. */
  retry?: boolean;
  /** Fail it with this message. */
  fail?: string;
  /** The foreach item, for a foreach node. */
  item?: number;
  /**
   * The unknown decided on: the `seq` of the run's `attention` entry (its `node.needs-attention`).
   * Refused (`resolve.stale`) when the node's unknown has changed since; required
   * (`resolve.unknown-unnamed`) when the unknown came after an earlier resolution of the node.
   */
  attentionSeq?: number;
}

/** A resolution as the fields an `outcome-resolved` fact (and a `resolve` command) carries. */
export function resolutionFields(r: Resolution) {
  const resolution = r.retry ? ('retry' as const) : r.fail !== undefined ? ('fail' as const) : ('succeeded' as const);
  return {
    resolution,
    by: r.by,
    ...(r.item !== undefined ? { item: r.item } : {}),
    ...(r.attentionSeq !== undefined ? { attentionSeq: r.attentionSeq } : {}),
    ...(resolution === 'succeeded' ? { output: r.succeeded ?? null } : {}),
    ...(resolution === 'fail' ? { reason: r.fail } : {}),
  };
}

// Operator actions shared by every host that accepts them: finding the invocation a node waits
// for, from the latest checkpoint and the events after it (never the whole journal).
import type { RunTail, SyncJournalStore } from './store.js';

export class OperatorError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'OperatorError';
  }
}

/** The invocation of kind `kinds` a node is waiting for, or a typed error. */
export function pendingInvocation(store: SyncJournalStore, runId: string, nodeId: string, kinds: readonly string[]): string {
  return pendingInTail(store.load(runId), runId, nodeId, kinds);
}

/** `pendingInvocation` in a tail the caller already loaded. */
export function pendingInTail(tail: RunTail | undefined, runId: string, nodeId: string, kinds: readonly string[]): string {
  if (!tail) throw new OperatorError('run.not-found', `run ${runId} does not exist in this store`);
  const decoder = new TextDecoder();
  const inflight = new Map<string, { nodeId: string; kind: string }>();
  if (tail.checkpoint) {
    const state = JSON.parse(decoder.decode(tail.checkpoint)) as { inflight: Record<string, { invocationId: string; nodeId: string; kind: string }> };
    for (const inv of Object.values(state.inflight)) inflight.set(inv.invocationId, inv);
  }
  for (const line of decoder.decode(tail.events).split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line);
    if (e.type === 'capability.requested') inflight.set(e.payload.invocationId, { nodeId: e.node.id, kind: e.payload.kind });
    if (e.type === 'capability.completed' || e.type === 'capability.cancelled' || e.type === 'capability.abandoned') inflight.delete(e.payload.invocationId);
  }
  for (const [id, inv] of inflight) if (inv.nodeId === nodeId && kinds.includes(inv.kind)) return id;
  throw new OperatorError('approval.not-pending', `node ${nodeId} of run ${runId} is not waiting for an approval`);
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
  succeeded?: unknown;
  retry?: boolean;
  fail?: string;
  item?: number;
}

/** A resolution as the fields an `outcome-resolved` fact (and a `resolve` command) carries. */
export function resolutionFields(r: Resolution) {
  const resolution = r.retry ? ('retry' as const) : r.fail !== undefined ? ('fail' as const) : ('succeeded' as const);
  return {
    resolution,
    by: r.by,
    ...(r.item !== undefined ? { item: r.item } : {}),
    ...(resolution === 'succeeded' ? { output: r.succeeded ?? null } : {}),
    ...(resolution === 'fail' ? { reason: r.fail } : {}),
  };
}

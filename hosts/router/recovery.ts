/**
 * Startup recovery of the runs a previous process left unfinished, from the journal and the
 * receipt log. Per invocation in flight in the journal (requested, not completed, cancelled or
 * abandoned):
 *
 *   local tool, receipts                     | what the router does
 *   -----------------------------------------+-------------------------------------------------
 *   completed                                | delivers capability-completed from the receipt
 *   none                                     | runs it again under the same invocation id: no
 *                                            | process ever existed (the claim precedes spawn)
 *   claimed, never started (lost), idempotent| runs it again under the same invocation id
 *   claimed, never started, not idempotent   | unknown (below): a crash between the fork inside
 *                                            | spawn and the `started` receipt leaves exactly
 *                                            | this, so a process may have run; the kill matrix
 *                                            | hit that window
 *   started, process still running           | exact stop (its output pipe is gone), then as below
 *   started, gone or unverifiable, no receipt| unknown: the run is resumed with afterRestart and
 *                                            | the engine marks it needs_attention (or reissues
 *                                            | an idempotent call; admission then refuses to
 *                                            | start a second process: tool.outcome-unknown)
 *   other capabilities (in process, agents)  | unknown, as above
 *
 * The facts of one run are delivered together, in that order, so they form one activation:
 * settled outcomes, outcomes of the re-run attempts, then `resume-requested`.
 */
import type { SyncJournalStore as JournalStore } from '../core/store.js';
import type { GatewayRequest } from '../core/types.js';
import type { AttemptRecovery } from './attempt-recovery.js';
import { recoveryPageEvents } from './limits.js';

/** The invocations of a run in flight according to its journal, as the requests that started them. */
export function inflightRequests(store: JournalStore, runId: string): GatewayRequest[] {
  const inflight = new Map<string, GatewayRequest>();
  for (let after = 0; ; ) {
    const page = store.readEvents(runId, after, recoveryPageEvents);
    for (const line of page.events) {
      const e = JSON.parse(line) as { type: string; node?: { id: string; attempt: number }; payload: Record<string, any> };
      if (e.type === 'capability.requested') {
        const p = e.payload;
        inflight.set(p.invocationId, {
          invocationId: p.invocationId,
          runId,
          nodeId: e.node?.id ?? '',
          attempt: e.node?.attempt ?? 1,
          kind: p.kind,
          name: p.name,
          input: p.input,
          effect: p.effect,
          ...(p.item !== undefined ? { item: p.item } : {}),
        });
      } else if (e.type === 'capability.completed' || e.type === 'capability.cancelled' || e.type === 'capability.abandoned') {
        inflight.delete(e.payload.invocationId);
      }
    }
    after = page.lastSeq;
    if (!page.more) break;
  }
  return [...inflight.values()];
}

export interface RunRecoveryPlan {
  runId: string;
  /** Outcomes read from completion receipts. */
  settled: { invocationId: string; recovery: Extract<AttemptRecovery, { state: 'settled' }> }[];
  /** Local tool requests that never started a process: run them again. */
  rerun: GatewayRequest[];
  /** Invocations whose outcome nobody knows: the engine decides (afterRestart). */
  unknown: string[];
}

/** Pure: what to do with each invocation in flight of one run. */
export function planRunRecovery(runId: string, inflight: readonly GatewayRequest[], attempts: ReadonlyMap<string, AttemptRecovery>, isLocalTool: (request: GatewayRequest) => boolean): RunRecoveryPlan {
  const plan: RunRecoveryPlan = { runId, settled: [], rerun: [], unknown: [] };
  for (const request of inflight) {
    if (!isLocalTool(request)) {
      plan.unknown.push(request.invocationId);
      continue;
    }
    const attempt = attempts.get(request.invocationId);
    if (!attempt || (attempt.state === 'lost' && attempt.idempotent)) plan.rerun.push(request);
    else if (attempt.state === 'settled') plan.settled.push({ invocationId: request.invocationId, recovery: attempt });
    else plan.unknown.push(request.invocationId);
  }
  return plan;
}

/**
 * Stops a process a previous host started and lost (its stdout pipe died with that host, so its
 * result can never be read): `stopping` receipt, then SIGKILL to its process group. The caller
 * has just verified its identity (same boot, same start ticks).
 */
export function stopOrphan(receipts: { stopping(invocationId: string, intent: string): unknown }, invocationId: string, pid: number): void {
  receipts.stopping(invocationId, 'recovery');
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, 'SIGKILL');
      return;
    } catch {
      // The group is gone; try the leader, or it ended on its own.
    }
  }
}

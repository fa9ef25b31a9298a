/**
 * Startup recovery of the runs a previous process left unfinished, from the projections of their
 * last commits (the calls in flight, with their effect class) and the receipt log. Per call in
 * flight:
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
import type { AttemptEvidence } from '../../engine/protocol/events.js';
import type { GatewayRequest, RunProjection } from '../core/types.js';
import type { AttemptRecovery } from './attempt-recovery.js';
import type { AttemptReceipts, ClaimReceipt } from './receipt-log.js';

/** A call in flight, as the run's projection lists it. */
export type CallInFlight = NonNullable<RunProjection['calls']>[number];

/** The calls of a run in flight, by the projection of its last commit (no event is read). */
export function inflightCalls(store: JournalStore, runId: string): CallInFlight[] {
  return store.getRun(runId)?.outcome?.calls ?? [];
}

/**
 * The request that started a call, to run it again: its recorded input is in the one
 * `capability.requested` event at `requestedSeq` (a read of one event, not a scan).
 */
export function requestOf(store: JournalStore, runId: string, call: CallInFlight): GatewayRequest {
  const [line] = store.readEvents(runId, call.requestedSeq - 1, 1).events;
  const event = line === undefined ? undefined : (JSON.parse(line) as { type: string; payload: { invocationId?: string; input?: unknown } });
  if (event?.type !== 'capability.requested' || event.payload.invocationId !== call.invocationId) {
    throw new Error(`run ${runId}: seq ${call.requestedSeq} is not the request of ${call.invocationId}`);
  }
  const { requestedSeq: _, ...rest } = call;
  return { ...rest, runId, input: event.payload.input };
}

export interface RunRecoveryPlan<Call extends { invocationId: string } = CallInFlight> {
  runId: string;
  /** Outcomes read from completion receipts. */
  settled: { invocationId: string; recovery: Extract<AttemptRecovery, { state: 'settled' }> }[];
  /** Local tool calls that never started a process: run them again. */
  rerun: Call[];
  /** Invocations whose outcome nobody knows: the engine decides (afterRestart). */
  unknown: string[];
}

/** Pure: what to do with each invocation in flight of one run. */
export function planRunRecovery<Call extends { invocationId: string; kind: string; name: string }>(runId: string, inflight: readonly Call[], attempts: ReadonlyMap<string, AttemptRecovery>, isLocalTool: (call: Call) => boolean): RunRecoveryPlan<Call> {
  const plan: RunRecoveryPlan<Call> = { runId, settled: [], rerun: [], unknown: [] };
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
 * Claims that name a run the journal does not hold, or a seq past the run's last one: the
 * journal lost records that were acknowledged before those attempts were claimed.
 */
export function claimsAheadOfJournal(claims: readonly ClaimReceipt[], lastSeqOf: (runId: string) => number | undefined): { invocationId: string; runId: string; journalSeq: number; lastSeq: number | undefined }[] {
  const out: { invocationId: string; runId: string; journalSeq: number; lastSeq: number | undefined }[] = [];
  for (const claim of claims) {
    if (claim.runId === undefined || claim.journalSeq === undefined) continue;
    const lastSeq = lastSeqOf(claim.runId);
    if (lastSeq === undefined || lastSeq < claim.journalSeq) out.push({ invocationId: claim.invocationId, runId: claim.runId, journalSeq: claim.journalSeq, lastSeq });
  }
  return out;
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

/**
 * Pure: what the receipts say of each unknown call (the `needs-attention` evidence): only claimed
 * (no start was recorded; a crash between the fork and the start receipt leaves this, so the
 * process may or may not have run), started (pid, when) and gone without a completion, or stopped
 * unfinished at a shutdown. Calls without receipts (in-process tools, agents) have none.
 */
export function attemptEvidence(unknown: readonly string[], attempts: ReadonlyMap<string, AttemptRecovery>, receiptsOf: (invocationId: string) => AttemptReceipts | undefined): Record<string, AttemptEvidence> {
  const out: Record<string, AttemptEvidence> = {};
  for (const id of unknown) {
    const recovery = attempts.get(id);
    const receipts = receiptsOf(id);
    if (!recovery || !receipts) continue;
    const claimedAt = receipts.claim.claimedAt;
    const start = receipts.start;
    if (!start) {
      out[id] = { stage: 'claimed', claimedAt, detail: 'claimed, no start recorded: the process may or may not have been started' };
      continue;
    }
    const detail = recovery.state === 'needs_attention' ? recovery.detail : undefined;
    const stage = recovery.state === 'needs_attention' && recovery.reason === 'stopped-at-shutdown' ? 'stopped' : 'started';
    out[id] = { stage, pid: start.pid, claimedAt, startedAt: start.startedAt, ...(detail ? { detail } : {}) };
  }
  return out;
}

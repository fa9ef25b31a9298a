/**
 * Startup recovery of local tool attempts. `classifyAttempt` is a pure function of the receipts
 * and of what is observed at the recorded pid now; `recoverAttempts` does the observing.
 *
 *   receipts                         | observation now                        | state
 *   ---------------------------------+----------------------------------------+-----------------
 *   completed, stopped unfinished at | (not looked at)                        | needs_attention
 *     a shutdown (intent shutdown)   |                                        |   (stopped-at-shutdown)
 *   completed                        | (not looked at)                        | settled
 *   claimed, never started           | (not looked at)                        | lost
 *   started, no completion           | same boot, same start ticks, not zombie| running
 *   started, no completion           | pid absent, zombie, other start ticks, | needs_attention
 *                                    | or other boot                          |   (process-gone)
 *   started, no completion           | identity not recorded, or unreadable   | needs_attention
 *                                    | now (no /proc, no boot id)             |   (identity-unverifiable)
 *
 * A started attempt without a receipt is never retried here, not even an idempotent one: its
 * outcome is unknown, and deciding to retry is the engine's business (`idempotent` is reported).
 */
import type { AttemptReceipts, CompletionReceipt } from './receipt-log.js';
import { observeProcess, readBootId, type ProcessIdentity, type ProcessObservation } from '../shared/process-identity.js';

export type AttemptRecovery =
  | { state: 'settled'; invocationId: string; idempotent: boolean; completion: CompletionReceipt }
  | { state: 'lost'; invocationId: string; idempotent: boolean }
  | { state: 'running'; invocationId: string; idempotent: boolean; identity: ProcessIdentity }
  | {
      state: 'needs_attention';
      invocationId: string;
      idempotent: boolean;
      reason: 'process-gone' | 'identity-unverifiable' | 'stopped-at-shutdown';
      detail: string;
    };

/**
 * A process the host stopped unfinished at the end of a graceful stop's grace: its step has no
 * outcome (the run stays running; after a restart it is unknown). One that still exited 0 with
 * its output finished its work, and that result counts.
 */
export function stoppedAtShutdown(c: CompletionReceipt): boolean {
  return c.stopIntent === 'shutdown' && !(c.exitCode === 0 && c.output !== undefined);
}

export interface ObservedNow {
  /** The boot id now, `undefined` when it cannot be read. */
  bootId: string | undefined;
  /** What is at the recorded pid now; `undefined` when nothing was observed. */
  observation: ProcessObservation | undefined;
}

export function classifyAttempt(attempt: AttemptReceipts, now: ObservedNow): AttemptRecovery {
  const base = { invocationId: attempt.claim.invocationId, idempotent: attempt.claim.idempotent };
  const completion = attempt.completion;
  if (completion && stoppedAtShutdown(completion)) {
    // Started and stopped unfinished by a graceful stop: it may have had effects; the engine decides.
    return { state: 'needs_attention', ...base, reason: 'stopped-at-shutdown', detail: `pid ${attempt.start?.pid} was stopped unfinished when the host shut down` };
  }
  if (completion) return { state: 'settled', ...base, completion };
  if (!attempt.start) return { state: 'lost', ...base };
  const attention = (reason: 'process-gone' | 'identity-unverifiable', detail: string): AttemptRecovery => ({
    state: 'needs_attention',
    ...base,
    reason,
    detail,
  });
  const identity = attempt.start.identity;
  const pid = attempt.start.pid;
  if (!identity) return attention('identity-unverifiable', `pid ${pid} was started without a readable identity`);
  if (now.bootId === undefined) return attention('identity-unverifiable', 'the boot id cannot be read');
  if (now.bootId !== identity.bootId) return attention('process-gone', `pid ${pid} belonged to boot ${identity.bootId}`);
  const seen = now.observation;
  if (!seen || seen.kind === 'unverifiable') {
    return attention('identity-unverifiable', `pid ${pid}: ${seen ? seen.reason : 'not observed'}`);
  }
  if (seen.kind === 'absent') return attention('process-gone', `pid ${pid} no longer exists`);
  if (seen.startTicks !== identity.startTicks) {
    return attention('process-gone', `pid ${pid} now belongs to another process (start ${seen.startTicks}, recorded ${identity.startTicks})`);
  }
  if (seen.zombie) return attention('process-gone', `pid ${pid} has exited without a receipt`);
  return { state: 'running', ...base, identity };
}

/** Classifies every attempt of a receipt log against the processes of this machine now. */
export function recoverAttempts(
  attempts: readonly AttemptReceipts[],
  observe: (pid: number) => ProcessObservation = observeProcess,
  bootId: string | undefined = readBootId(),
): AttemptRecovery[] {
  return attempts.map((attempt) =>
    classifyAttempt(attempt, {
      bootId,
      observation: attempt.start && !attempt.completion ? observe(attempt.start.pid) : undefined,
    }),
  );
}

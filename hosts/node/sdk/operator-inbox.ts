// The inbox side of the operator verbs: a command is committed to a run's inbox, then applied by
// the run's owner (this process when it holds or can take the lease, else the live owner or a
// worker) and followed until applied, refused, or the run ended without it.
import { isTerminal } from '../../core/host-runtime.js';
import type { Kernel } from '../../core/kernel.js';
import type { CommandResult, OperatorCommand, RunOwnership } from '../../core/ownership-store.js';
import type { JournalStore } from '../../core/store.js';
import { assertCommandArgument, assertRunIdArgument } from './arguments.js';
import { asError, WorkflowError } from './errors.js';
import type { CommandOutcome } from './runtime-types.js';

/** What the inbox reads and calls: the store, the kernel's leases, and this process's workers. */
export interface InboxHost {
  readonly kernel: Kernel;
  readonly store: JournalStore;
  readonly ownership: RunOwnership;
  readonly ownerId: string;
  readonly pollMs: number;
  liveWorkers(): Promise<readonly unknown[]>;
  wakeWorkers(): void;
}

export class OperatorInbox {
  constructor(private readonly host: InboxHost) {}

  /**
   * Commits an operator command to the run's inbox, then sees it applied: by this process when it
   * owns the run or can take its lease (nobody else owns it), else by the live owner. Resolves
   * once it is applied; a command the engine refuses rejects with the engine's error.
   */
  async command(runId: string, command: OperatorCommand, options: { timeoutMs?: number } = {}): Promise<CommandOutcome> {
    const wait = (options as { timeoutMs?: unknown } | null)?.timeoutMs;
    if (wait !== undefined && !(Number.isSafeInteger(wait) && (wait as number) >= 1)) {
      throw new WorkflowError('sdk.bad-argument', `options.timeoutMs (how long to wait for the command to be applied) must be an integer of 1 ms or more, not ${typeof wait === 'number' ? wait : typeof wait}`, { argument: 'options.timeoutMs' });
    }
    const id = await this.post(runId, command);
    const leases = this.host.kernel.leases!;
    // Set when the run was found terminal (`run <id> is <status>`): the commit that ended it either
    // applied this command (its owner marks the command applied in that same transaction) or never will.
    let ended: string | undefined;
    // With workers on the store, a run nobody owns is theirs to take: this process only follows.
    const applyHere = async () => {
      if (leases.held(runId)) return true;
      if ((await this.host.liveWorkers()).length > 0) {
        const record = await this.host.store.getRun(runId);
        if (record && isTerminal(record)) ended = `run ${runId} is ${record.status}`;
        return false;
      }
      const grant = await this.host.kernel.takeLease(runId);
      if (grant.ok) return true;
      if (grant.code === 'run.terminal') ended = grant.message;
      else if (grant.code === 'lease.clock-skew') throw new WorkflowError(grant.code, `${grant.message}. Command ${id} (${command.type}) is committed to run ${runId}'s inbox: its owner, or a worker, applies it`, { commandId: id });
      else if (grant.code !== 'lease.held') throw new WorkflowError(grant.code, grant.message);
      return false;
    };
    if (await applyHere()) void leases.poll();
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const result = ended !== undefined ? await this.settleEnded(id, ended) : await this.host.ownership.commandResult(id);
      if (result?.state === 'applied') return { ...(await this.host.kernel.outcomeFromStore(runId)), commandId: id, ...(result.appliedBy ? { appliedBy: result.appliedBy } : {}) };
      if (result?.state === 'refused') throw new WorkflowError(result.error?.code ?? 'command.refused', result.error?.message ?? 'the command was refused', { commandId: id });
      if (ended !== undefined) throw new WorkflowError('run.terminal', endedBeforeApplied(ended, id), { commandId: id });
      if (Date.now() >= deadline) {
        const record = await this.host.store.getRun(runId);
        throw new WorkflowError(
          'command.pending',
          `command ${id} (${command.type}) is committed to run ${runId}'s inbox but was not applied within ${options.timeoutMs ?? 30_000} ms; ${record?.lease?.owner ? `its owner ${record.lease.owner} applies it when it reads its inbox` : 'a worker or the next command applies it'}`,
          { commandId: id },
        );
      }
      // The lease may have been given up meanwhile: then this process (or a worker) applies it.
      if (await applyHere()) void leases.poll();
      if (!ended) await new Promise((r) => setTimeout(r, this.host.pollMs));
    }
  }

  /**
   * Commits a command to a run's inbox and returns its id, without applying it: the run's owner,
   * or a worker when the run has none, applies it (`commandResult` tells when).
   */
  async post(runId: string, command: OperatorCommand): Promise<number> {
    assertRunIdArgument(runId);
    assertCommandArgument(command);
    let id: number;
    try {
      id = await this.host.ownership.postCommand(runId, command, this.host.kernel.now());
    } catch (err) {
      throw asError(err);
    }
    this.host.wakeWorkers();
    return id;
  }

  /**
   * Where a posted command stands: pending, applied (by whom), or refused (with the error). A
   * command posted to a run that had ended is stored refused (`run.terminal`); one still pending
   * when its run ended is refused by the first reader that sees the run ended (`settleEnded`).
   */
  async commandResult(commandId: number): Promise<CommandResult | undefined> {
    const result = await this.host.ownership.commandResult(commandId);
    if (result?.state !== 'pending') return result;
    const record = await this.host.store.getRun(result.runId);
    if (!record || !isTerminal(record)) return result;
    return this.settleEnded(commandId, `run ${result.runId} is ${record.status}`);
  }

  /**
   * The state of a command read after its run was seen ended (`ended`: "run <id> is <status>"):
   * applied by the commit that ended the run or an earlier one (marked in the same transaction as
   * that commit, so visible by now), refused, or pending for good, since no commit of an ended run
   * applies anything. Then it is stored refused with `run.terminal`, for every later reader.
   */
  private async settleEnded(id: number, ended: string): Promise<CommandResult | undefined> {
    const result = await this.host.ownership.commandResult(id);
    if (result?.state !== 'pending') return result;
    await this.host.ownership.refuseCommands([{ id, error: { code: 'run.terminal', message: endedBeforeApplied(ended, id) } }], this.host.ownerId, this.host.kernel.now());
    return this.host.ownership.commandResult(id);
  }
}

/** Why a command still pending on an ended run is refused (`ended`: "run <id> is <status>"). */
function endedBeforeApplied(ended: string, commandId: number): string {
  return `${ended}; it ended before command ${commandId} was applied`;
}

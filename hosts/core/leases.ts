// The leases one process holds, kept alive by heartbeat, and the inbox of the runs it owns,
// polled and applied in order. The kernel asks it for the lease a commit is staged under and
// tells it which leases its commits took, kept or gave up.
import type { InboxCommand, LeaseGrant, OperatorCommand, RunOwnership } from './ownership-store.js';
import type { ActivationSummary, CapabilityError, HostLog } from './types.js';

export interface LeaseOptions {
  /** This process's owner id (see hosts/node/stores/owner-id.ts). */
  owner: string;
  /** How long a lease lasts without a heartbeat (default 15 s). */
  ttlMs?: number;
  /** How often leases are renewed (default a third of `ttlMs`). */
  heartbeatMs?: number;
  /** How often the inbox of owned runs is read (default 100 ms). */
  pollMs?: number;
}

export const leaseDefaults = { ttlMs: 15_000, pollMs: 100 } as const;

/** How many slow renewals in a row `ensureValid` tries before the process lets go of the run. */
const leaseRenewalAttempts = 3;

type Apply = (runId: string, command: InboxCommand) => Promise<ActivationSummary>;

export class LeaseKeeper {
  readonly owner: string;
  readonly ttlMs: number;
  readonly pollMs: number;
  private readonly heartbeatMs: number;
  /** Leases held now: run id -> epoch. */
  private readonly mine = new Map<string, number>();
  /**
   * Until when each held lease is known to be this process's, by this process's clock: the time a
   * grant, claim or renewal was asked for plus the lease's lifetime (the store counts from the
   * same `now`). Past it, another process may have taken the run over.
   */
  private readonly validUntil = new Map<string, number>();
  /** The epoch of the last lease this process held on a run it gave up: if nobody took one since, its view of the run is current. */
  private readonly lastEpoch = new Map<string, number>();
  private readonly applying = new Set<number>();
  private readonly lostListeners: ((runId: string) => void)[] = [];
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  private clockWatch: ReturnType<typeof setInterval> | undefined;
  /** Why this process takes no lease now: its clock is too far from the store's (`checkClock`). */
  private clockProblem: string | undefined;
  private poller: ReturnType<typeof setTimeout> | undefined;
  private polling = false;
  private stopped = false;

  constructor(
    private readonly ownership: RunOwnership,
    options: LeaseOptions,
    private readonly now: () => number,
    private readonly log: HostLog,
    private readonly apply: Apply,
  ) {
    this.owner = options.owner;
    this.ttlMs = options.ttlMs ?? leaseDefaults.ttlMs;
    this.heartbeatMs = options.heartbeatMs ?? Math.max(10, Math.floor(this.ttlMs / 3));
    this.pollMs = options.pollMs ?? leaseDefaults.pollMs;
  }

  onLost(listener: (runId: string) => void): void {
    this.lostListeners.push(listener);
  }

  get size(): number {
    return this.mine.size;
  }

  held(runId: string): { owner: string; epoch: number } | undefined {
    const epoch = this.mine.get(runId);
    return epoch === undefined ? undefined : { owner: this.owner, epoch };
  }

  /**
   * How far this process's clock may be from the store's: an eighth of the lease lifetime. Two
   * processes then differ by at most a quarter, less than the third of a lifetime a lease must
   * still be known valid for before a call starts (`knownValid`), so a process that takes a lease
   * it judges expired never takes it while its owner may still start a call under it.
   */
  get maxClockSkewMs(): number {
    return Math.floor(this.ttlMs / 8);
  }

  /**
   * Compares this process's clock with the store's, for a store that machines share (`serverTime`);
   * a store without one passes. Beyond `maxClockSkewMs` (the round trip's uncertainty given the
   * benefit of the doubt), the process takes no lease and claims nothing (`clockRefusal`) until a
   * later check finds the clocks agree again; the first finding is logged as an error.
   */
  async checkClock(): Promise<void> {
    if (!this.ownership.serverTime) return;
    const sent = this.now();
    const server = await this.ownership.serverTime();
    const received = this.now();
    const offset = server - (sent + received) / 2;
    const bound = this.maxClockSkewMs;
    if (Math.abs(offset) - (received - sent) / 2 > bound) {
      const problem = `this process's clock is ${Math.round(Math.abs(offset))} ms ${offset > 0 ? 'behind' : 'ahead of'} the store's; at most ${bound} ms are allowed (an eighth of the lease lifetime, ${this.ttlMs} ms), because a lease's expiry is written by one machine's clock and read by another's. Until the clock is corrected (NTP), this process takes no lease and claims no run`;
      if (this.clockProblem === undefined) this.log('error', `lease.clock-skew: ${problem}`);
      this.clockProblem = problem;
    } else if (this.clockProblem !== undefined) {
      this.clockProblem = undefined;
      this.log('info', `this process's clock agrees with the store's again (${Math.round(offset)} ms apart); it takes leases again`);
    }
  }

  /** Checks the clock now and then every `everyMs` (a store without a clock of its own: never). */
  async watchClock(everyMs = Math.max(1000, this.heartbeatMs)): Promise<void> {
    if (!this.ownership.serverTime) return;
    await this.checkClock();
    if (this.stopped || this.clockWatch) return;
    this.clockWatch = setInterval(() => this.checkClock().catch((err) => this.log('warn', `checking the clock against the store's failed: ${(err as Error).message}`)), everyMs);
    (this.clockWatch as { unref?: () => void }).unref?.();
  }

  /** The refusal to give while this process's clock is too far from the store's. */
  clockRefusal(): { code: 'lease.clock-skew'; message: string } | undefined {
    return this.clockProblem === undefined ? undefined : { code: 'lease.clock-skew', message: this.clockProblem };
  }

  /** The lease a new run's first commit creates (epoch 1), or the one a worker claimed it with. */
  forNewRun(runId: string, claimedEpoch?: number): { owner: string; epoch: number; expiresAt: number } {
    const expiresAt = this.now() + this.ttlMs;
    // A claimed run's lease counts from its claim (recorded by `committed`), not from now.
    if (claimedEpoch === undefined) this.validUntil.set(runId, expiresAt);
    return { owner: this.owner, epoch: claimedEpoch ?? 1, expiresAt };
  }

  /**
   * Whether this process may start work that needs it to own the run (a call that is not safe to
   * run twice): the lease is held and known valid for at least a third of its lifetime more. A
   * lease closer to its end (a process stalled past its heartbeats) is renewed first; when the
   * renewal finds the run taken over, the lease is dropped and the answer is no. Synchronous when
   * the lease is comfortably valid.
   */
  ensureValid(runId: string): boolean | Promise<boolean> {
    const epoch = this.mine.get(runId);
    if (epoch === undefined) return false;
    if (this.knownValid(runId)) return true;
    return this.renewUntilValid(runId, epoch);
  }

  /**
   * Whether the lease on `runId` (held, or created by the commit being staged) is known valid for
   * a third of its lifetime more, without renewing: the test for starting a call before the commit
   * that records its request has landed (`Dispatcher.dispatchEarly`).
   */
  knownValid(runId: string): boolean {
    return this.validFor(runId) > this.ttlMs / 3;
  }

  /** How long the lease on `runId` is known to stay this process's, by this process's clock. */
  private validFor(runId: string): number {
    const until = this.validUntil.get(runId);
    return until === undefined ? -Infinity : until - this.now();
  }

  /**
   * Renews one lease until it is known valid for a third of its lifetime more. A renewal counts
   * from when it was asked, so one that took most of the lifetime to land (a saturated pool, a
   * starved CPU) leaves too little to start a call on: it is asked again. After a few such
   * renewals the process lets go of the run, as when a renewal fails.
   */
  private async renewUntilValid(runId: string, epoch: number): Promise<boolean> {
    for (let attempt = 0; attempt < leaseRenewalAttempts; attempt++) {
      if (!(await this.renewOne(runId, epoch))) return false;
      if (this.knownValid(runId)) return true;
    }
    this.log('warn', `renewing the lease of ${runId} took most of its lifetime ${leaseRenewalAttempts} times in a row, so this process lets go of the run`);
    this.lose(runId);
    return false;
  }

  private async renewOne(runId: string, epoch: number): Promise<boolean> {
    const at = this.now();
    try {
      const lost = await this.ownership.renewLeases(this.owner, new Map([[runId, epoch]]), this.ttlMs, at);
      if (lost.includes(runId)) {
        this.lose(runId);
        return false;
      }
    } catch (err) {
      // Not knowing whether the run is still ours, start nothing and let go of it: whoever takes it
      // over next (this process too, once the lease has expired) resumes it from the journal.
      this.log('warn', `renewing the lease of ${runId} failed, so this process lets go of the run: ${(err as Error).message}`);
      this.lose(runId);
      return false;
    }
    if (this.mine.get(runId) !== epoch) return false;
    this.validUntil.set(runId, at + this.ttlMs);
    return true;
  }

  private lose(runId: string): void {
    if (!this.mine.has(runId)) return;
    this.drop(runId);
    for (const l of this.lostListeners) l(runId);
  }

  /**
   * Takes a run's lease. `continued` says that nobody held the run since this process gave it
   * up, so what this process knows of it is still current.
   */
  async acquire(runId: string): Promise<LeaseGrant & { continued?: boolean }> {
    const skew = this.clockRefusal();
    if (skew) return { ok: false, ...skew };
    const at = this.now();
    const grant = await this.ownership.acquireLease(runId, this.owner, this.ttlMs, at);
    if (!grant.ok) return grant;
    const continued = this.mine.get(runId) === grant.epoch || this.lastEpoch.get(runId) === grant.previousEpoch;
    this.mine.set(runId, grant.epoch);
    this.validUntil.set(runId, at + this.ttlMs);
    this.lastEpoch.delete(runId);
    this.start();
    return { ...grant, continued };
  }

  /**
   * A commit under the lease landed and the run goes on here; or a worker claimed the run
   * (`claimedAt`: the `now` the claim was made with, from which its lease counts).
   */
  committed(runId: string, epoch: number, claimedAt?: number): void {
    this.mine.set(runId, epoch);
    if (claimedAt !== undefined) this.validUntil.set(runId, claimedAt + this.ttlMs);
    this.start();
  }

  /** A commit under the lease landed and gave the lease up. */
  released(runId: string, epoch: number): void {
    this.mine.delete(runId);
    this.validUntil.delete(runId);
    this.lastEpoch.set(runId, epoch);
    if (this.lastEpoch.size > 10_000) this.lastEpoch.delete(this.lastEpoch.keys().next().value as string);
  }

  /** The lease is lost (fenced): forget it. */
  drop(runId: string): void {
    this.mine.delete(runId);
    this.validUntil.delete(runId);
    this.lastEpoch.delete(runId);
  }

  refuse(refusals: readonly { id: number; error: { code: string; message: string } }[]): Promise<void> {
    return Promise.resolve(this.ownership.refuseCommands(refusals, this.owner, this.now()));
  }

  /** Records, through the run's inbox, the outcome of a call that ended after this process lost the run. */
  async postLateOutcome(runId: string, outcome: { invocationId: string; ok: boolean; output?: unknown; error?: CapabilityError }): Promise<void> {
    const command: OperatorCommand = { type: 'late-outcome', invocationId: outcome.invocationId, ok: outcome.ok, ...(outcome.ok ? { output: outcome.output ?? null } : { error: outcome.error ?? { code: 'capability.failed', message: 'the capability failed' } }), by: this.owner };
    await this.ownership.postCommand(runId, command, this.now());
  }

  private start(): void {
    if (this.stopped) return;
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => void this.renew(), this.heartbeatMs);
      this.heartbeat.unref?.();
    }
    if (!this.poller) this.schedulePoll();
  }

  private schedulePoll(): void {
    if (this.stopped) return;
    this.poller = setTimeout(() => void this.poll(), this.pollMs);
    this.poller.unref?.();
  }

  private async renew(): Promise<void> {
    if (this.mine.size === 0) return;
    const at = this.now();
    const renewing = new Map(this.mine);
    try {
      const lost = new Set(await this.ownership.renewLeases(this.owner, renewing, this.ttlMs, at));
      for (const runId of lost) this.lose(runId);
      for (const [runId, epoch] of renewing) if (!lost.has(runId) && this.mine.get(runId) === epoch) this.validUntil.set(runId, at + this.ttlMs);
    } catch (err) {
      this.log('warn', `lease heartbeat failed: ${(err as Error).message}`);
    }
  }

  /** Reads the inbox of the runs this process owns now (also called right after posting one). */
  async poll(): Promise<void> {
    if (this.polling || this.stopped) return;
    this.polling = true;
    if (this.poller) clearTimeout(this.poller);
    this.poller = undefined;
    try {
      if (this.mine.size === 0) return;
      const commands = await this.ownership.pendingCommands([...this.mine.keys()], 256);
      for (const c of commands) {
        if (this.applying.has(c.id) || !this.mine.has(c.runId)) continue;
        this.applying.add(c.id);
        this.apply(c.runId, c)
          .catch((err) => this.log('info', `inbox command ${c.id} of run ${c.runId} (${c.command.type}) was refused: ${(err as Error).message}`))
          .finally(() => this.applying.delete(c.id));
      }
    } catch (err) {
      this.log('warn', `reading the inbox failed: ${(err as Error).message}`);
    } finally {
      this.polling = false;
      if (this.mine.size > 0) this.schedulePoll();
    }
  }

  /**
   * Applies the commands waiting in one run's inbox, in order, one after the other (a worker that
   * claimed the run because of them). Answers how many were applied or refused.
   */
  async applyPending(runId: string): Promise<number> {
    const commands = await this.ownership.pendingCommands([runId], 256);
    let n = 0;
    for (const c of commands) {
      if (this.applying.has(c.id)) continue;
      this.applying.add(c.id);
      try {
        await this.apply(c.runId, c);
      } catch (err) {
        this.log('info', `inbox command ${c.id} of run ${c.runId} (${c.command.type}) was refused: ${(err as Error).message}`);
      } finally {
        this.applying.delete(c.id);
      }
      n += 1;
    }
    return n;
  }

  /** Stops heartbeats and polling and gives every lease up. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.clockWatch) clearInterval(this.clockWatch);
    this.clockWatch = undefined;
    if (this.poller) clearTimeout(this.poller);
    this.heartbeat = undefined;
    this.poller = undefined;
    const held = [...this.mine];
    this.mine.clear();
    this.validUntil.clear();
    for (const [runId, epoch] of held) {
      try {
        await this.ownership.releaseLease(runId, this.owner, epoch);
      } catch (err) {
        this.log('warn', `releasing the lease of ${runId} failed: ${(err as Error).message}`);
      }
    }
  }
}

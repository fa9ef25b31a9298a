// The scheduler: the queue of facts per run, and the flush that turns it into activations and
// group commits. Per batch: activate every run of the batch (in one call into the engine,
// `activateBatch`; what it could not do, one run at a time) -> store.commit(all their entries,
// each with the projection of its run) -> for the entries that landed, the kernel carries out
// what they staged (`committed`). A trap of the engine fails the run that caused it; the rest of
// its batch goes back to the front of the queue, activated by the next round on a fresh instance.
import { EngineCallError, EngineTrapError, type ActivationInput, type EngineInstance, type StagedWork } from './engine-instance.js';
import { KernelError } from './kernel-errors.js';
import type { LeaseKeeper } from './leases.js';
import { storedProjection } from './projection.js';
import { StoreError, type CommitEntry, type JournalStore, type RunTail } from './store.js';
import { terminalStatuses, type ActivationSummary, type ExecutionPlan, type Fact, type GatewayRequest, type HostLog } from './types.js';

/**
 * Runs `fn` on a later turn of the event loop, after pending I/O: `setImmediate` where the
 * platform has it (Node), a zero timeout elsewhere (browsers, workers).
 */
export const nextTurn: (fn: () => void) => void =
  typeof (globalThis as { setImmediate?: unknown }).setImmediate === 'function' ? (fn) => void (globalThis as unknown as { setImmediate: (f: () => void) => unknown }).setImmediate(fn) : (fn) => void setTimeout(fn, 0);

/**
 * The staged requests that are still in flight when the activation ends. A later fact of the same
 * activation can settle a call the activation itself requested: a takeover's resume, applied
 * together with a command that started a new attempt, abandons it (`capability.abandoned` in the
 * same commit as its `capability.requested`). The journal then says the call never ran, so it is
 * not carried out.
 */
function stillInFlight(requests: GatewayRequest[], summary: ActivationSummary): GatewayRequest[] {
  if (requests.length === 0) return requests;
  const inFlight = new Set((summary.calls ?? []).map((c) => c.invocationId));
  return requests.every((r) => inFlight.has(r.invocationId)) ? requests : requests.filter((r) => inFlight.has(r.invocationId));
}

/**
 * The commits of a run's activations in one batch (a fold's), consecutive ones written as one
 * entry: the store checks the run's sequence and writes its row once, not once per activation.
 * An entry with a checkpoint ends its group (the checkpoint is the state at the group's last
 * seq), and a group's events stay within `bytesMax` (the bound on one commit's events). The
 * journal is the same event for event.
 */
export function mergedCommits(commits: CommitEntry[], bytesMax = Infinity): CommitEntry[] {
  if (commits.length < 2) return commits;
  const out: CommitEntry[] = [];
  let group = [commits[0]];
  let bytes = commits[0].events.byteLength;
  for (let i = 1; i < commits.length; i++) {
    const c = commits[i];
    const previous = group[group.length - 1];
    if (c.runId === previous.runId && previous.checkpoint === undefined && c.expectedSeq === previous.lastSeq && !c.plan && bytes + 1 + c.events.byteLength <= bytesMax) {
      group.push(c);
      bytes += 1 + c.events.byteLength;
    } else {
      out.push(joined(group, bytes));
      group = [c];
      bytes = c.events.byteLength;
    }
  }
  out.push(joined(group, bytes));
  return out;
}

/** One entry for commits of consecutive seqs: the first's expected seq and plan, the last's state, every event in order. */
function joined(group: CommitEntry[], bytes: number): CommitEntry {
  if (group.length === 1) return group[0];
  const events = new Uint8Array(bytes);
  let at = 0;
  for (const c of group) {
    if (at > 0) events[at++] = 0x0a;
    events.set(c.events, at);
    at += c.events.byteLength;
  }
  const first = group[0];
  return { ...group[group.length - 1], expectedSeq: first.expectedSeq, events, ...(first.plan ? { plan: first.plan } : {}) };
}

/** At most this many activations of a run go into one commit (see `Scheduler.fold`). */
export const foldActivationsMax = 16;

/** Facts of one `deliver` call: applied together, refused together. */
export interface FactGroup {
  facts: Fact[];
  actor?: string;
  /** Inbox command this group applies (marked applied in the commit). */
  commandId?: number;
  resolve: (s: ActivationSummary) => void;
  reject: (e: unknown) => void;
}

/** Everything queued for one run. */
export interface Pending {
  groups: FactGroup[];
  newRun?: {
    plan: ExecutionPlan;
    templateKey?: string;
    epoch?: number;
    delivery?: CommitEntry['delivery'];
    /**
     * The run id was just drawn at random by this process (not named by a caller or an
     * idempotency key): no journal holds it, so the engine's check for an existing run is
     * answered without a store read (the commit's sequence check would refuse one all the same).
     */
    fresh?: boolean;
  };
}

/** One activation whose commit landed: what the kernel carries out now. */
export interface Committed {
  runId: string;
  groups: FactGroup[];
  summary: ActivationSummary;
  requests: GatewayRequest[];
  cancels: { invocationId: string; reason: string }[];
  lease?: CommitEntry['lease'];
  /** Whether the run came to rest with this commit (its lease was given up with it). */
  rest: boolean;
  /** Whether the activation committed anything. */
  wrote: boolean;
}

/** A run of a batch whose lease is settled, ready to be activated. */
interface Ready {
  runId: string;
  pending: Pending;
  lease: CommitEntry['lease'] | undefined;
}

/** An activation of a batch, waiting for the batch's commit. */
type Result = Omit<Committed, 'rest' | 'wrote'> & {
  commits: CommitEntry[];
  rest?: boolean;
  delivery?: CommitEntry['delivery'];
  early?: string[];
  /** The commit is the run's first, of a run id drawn here (`Pending.newRun.fresh`): only read-only calls start beside it. */
  firstOfFresh?: boolean;
};

/** What the scheduler works with: the engine, the store, the clock and when it flushes. */
export interface SchedulerOptions {
  engine: EngineInstance;
  store: JournalStore;
  log: HostLog;
  now(): number;
  leases?: LeaseKeeper;
  manual: boolean;
  /** See `KernelOptions.commitBytesMax`. */
  commitBytesMax?: number;
  /** See `KernelOptions.activating`. */
  activating?: (runId: string | undefined) => void;
  /** See `KernelOptions.queued`. */
  queued?: () => void;
}

/** The calls of committed activations (kernel-dispatch.ts's `Dispatcher`). */
export interface SchedulerDispatch {
  /** Calls of the run in flight here that need this process to stay its owner. */
  busyFor(runId: string): number;
  /** Starts a read-only or idempotent call (`readOnlyOnly`: a read-only one) before its commit lands, when that is safe; answers whether it did. */
  dispatchEarly(request: GatewayRequest, readOnlyOnly?: boolean): boolean;
  /** Whether the commit of early calls' requests landed (their outcomes go on) or not (they are aborted). */
  landed(invocationIds: readonly string[], landed: boolean): void;
  /** The outcomes of these early calls, when all of them ended before their commit was written. */
  readyFacts(invocationIds: readonly string[]): Fact[] | undefined;
  /** Those outcomes were folded into their requests' commit: they are not delivered again. */
  take(invocationIds: readonly string[]): void;
  /** Carries out a request whose commit landed. */
  dispatch(request: GatewayRequest): void;
  /** Stops a call the engine cancelled. */
  cancel(invocationId: string, reason: string): void;
}

/** Child runs (kernel-children.ts's `ChildRuns`): an ended run's outcome goes to its parent. */
export interface SchedulerChildren {
  ended(runId: string, summary: ActivationSummary): void;
}

/** Wake-ups (kernel-wake-ups.ts's `WakeUps`): the next time a run wants an activation. */
export interface SchedulerWakeUps {
  arm(runId: string, summary: ActivationSummary): void;
}

/** The kernel's books of the runs it activates: their leases, what it knows of them, who waits. */
export interface RunBooks {
  closed(): boolean;
  /** The lease a run's commit is staged under; `null` when the run is owned elsewhere (its groups were rejected). */
  leaseFor(runId: string, pending: Pending): Promise<CommitEntry['lease'] | null | undefined>;
  /** The run's activation was discarded: its engine copy is dropped. */
  evict(runId: string): void;
  /** This process no longer knows how the run's in-flight work ended (its facts were lost). */
  lost(runId: string, err: unknown): void;
  /** The run's commit was refused by the fencing check: another process owns it now. */
  fenced(runId: string): void;
  /** A commit landed: the run's lease is renewed or given up, and the run is known here or not. */
  recorded(result: Committed): void;
  /** The run ended: what was kept to carry it out (its plan) is dropped. */
  ended(runId: string): void;
  /** Whoever waits on the run learns of the commit. */
  notify(result: Committed): void;
}

/** Everything the scheduler calls, each through its own interface. */
export interface SchedulerParts {
  options: SchedulerOptions;
  dispatch: SchedulerDispatch;
  children: SchedulerChildren;
  wakeUps: SchedulerWakeUps;
  books: RunBooks;
}

export class Scheduler {
  private readonly queue = new Map<string, Pending>();
  private flushScheduled = false;
  /** True while a flush runs. */
  flushing = false;
  /** Tails loaded ahead of a cold activation, for stores that cannot answer `load` synchronously. */
  private readonly tails = new Map<string, RunTail | undefined>();
  /** A batch call trapped: the next batch is activated one run at a time, to find the run that traps. */
  private oneAtATime = false;

  private readonly host: SchedulerOptions;
  private readonly dispatch: SchedulerDispatch;
  private readonly children: SchedulerChildren;
  private readonly wakeUps: SchedulerWakeUps;
  private readonly books: RunBooks;

  constructor(parts: SchedulerParts) {
    ({ options: this.host, dispatch: this.dispatch, children: this.children, wakeUps: this.wakeUps, books: this.books } = parts);
  }

  has(runId: string): boolean {
    return this.queue.has(runId);
  }

  get size(): number {
    return this.queue.size;
  }

  /**
   * The engine's synchronous `load`: a tail loaded ahead, else the store's own synchronous load;
   * a store that has neither makes the scheduler load the tail and try again.
   */
  loadForEngine(runId: string): RunTail | undefined {
    if (this.tails.has(runId)) {
      const tail = this.tails.get(runId);
      this.tails.delete(runId);
      return tail;
    }
    if (this.host.store.loadSync) return this.host.store.loadSync(runId);
    throw new StoreError('store.not-loaded', `run ${runId} must be loaded before its activation`);
  }

  enqueue(runId: string, facts: Fact[], actor?: string, newRun?: Pending['newRun'], commandId?: number): Promise<ActivationSummary> {
    if (this.books.closed()) return Promise.reject(new KernelError('host.closed', 'the host is closed'));
    return new Promise((resolve, reject) => {
      let pending = this.queue.get(runId);
      if (!pending) this.queue.set(runId, (pending = { groups: [] }));
      pending.groups.push({ facts, ...(actor ? { actor } : {}), ...(commandId !== undefined ? { commandId } : {}), resolve, reject });
      if (newRun) pending.newRun = newRun;
      this.host.queued?.();
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.host.manual || this.flushScheduled || this.flushing) return;
    this.flushScheduled = true;
    nextTurn(() => {
      this.flushScheduled = false;
      void this.flush();
    });
  }

  /**
   * Activates runs with queued facts, oldest first, and group-commits each batch. Without a
   * limit it goes on until the queue is empty; with `maxRuns` it activates at most that many
   * runs, in one batch. Resolves with the number of runs activated.
   */
  async flush(maxRuns = Infinity): Promise<number> {
    if (this.flushing) return 0;
    this.flushing = true;
    let activated = 0;
    try {
      while (this.queue.size > 0 && activated < maxRuns) {
        if (this.host.engine.dead) await this.host.engine.revive();
        const batch: [string, Pending][] = [];
        for (const entry of this.queue) {
          if (batch.length >= maxRuns - activated) break;
          batch.push(entry);
        }
        for (const [runId] of batch) this.queue.delete(runId);
        activated += await this.runBatch(batch);
      }
    } finally {
      this.flushing = false;
    }
    return activated;
  }

  /** Puts facts back in front of the queue (a batch cut short by a trap). */
  private requeue(rest: [string, Pending][]): void {
    const after = [...this.queue];
    this.queue.clear();
    for (const [runId, pending] of rest) this.queue.set(runId, pending);
    for (const [runId, pending] of after) {
      const first = this.queue.get(runId);
      if (first) first.groups.push(...pending.groups);
      else this.queue.set(runId, pending);
    }
  }

  /**
   * Whether the engine's check for an existing run is answered "none" without asking the store:
   * a new run has no journal to load, so a store without a synchronous load is not asked (the
   * commit's sequence check still refuses a run id that exists), nor is any store for a run id
   * drawn at random here.
   */
  private hasNoTail(pending: Pending): boolean {
    return pending.newRun !== undefined && (pending.newRun.fresh === true || !this.host.store.loadSync);
  }

  /** What an activation of a run's `groups` gives the batch's commit. */
  private resultOf({ runId, pending, lease }: Ready, groups: FactGroup[], out: { summary: ActivationSummary } & StagedWork): Result {
    return {
      runId,
      groups,
      summary: out.summary,
      requests: stillInFlight(out.requests, out.summary),
      cancels: out.cancels,
      commits: out.commits,
      lease,
      ...(pending.newRun?.delivery ? { delivery: pending.newRun.delivery } : {}),
      ...(pending.newRun?.fresh === true && out.commits.some((c) => c.expectedSeq === 0) ? { firstOfFresh: true } : {}),
    };
  }

  /** The activation that applies `groups` of a run's queued facts. */
  private activationOf(runId: string, pending: Pending, groups: FactGroup[]): ActivationInput {
    return {
      runId,
      now: this.host.now(),
      facts: groups.flatMap((g) => g.facts),
      ...(groups[groups.length - 1].actor ? { actor: groups[groups.length - 1].actor } : {}),
      ...(pending.newRun ? { plan: pending.newRun.plan, templateKey: pending.newRun.templateKey } : {}),
      ...(this.host.commitBytesMax !== undefined ? { commitBytesMax: this.host.commitBytesMax } : {}),
    };
  }

  private activateGroups(runId: string, pending: Pending, groups: FactGroup[]) {
    this.host.activating?.(runId);
    try {
      return this.host.engine.activate(this.activationOf(runId, pending, groups));
    } finally {
      this.host.activating?.(undefined);
    }
  }

  /** One activation; a cold run of a store without a synchronous load is loaded first. */
  private async activateLoading(runId: string, pending: Pending, groups: FactGroup[]) {
    try {
      if (this.hasNoTail(pending)) this.tails.set(runId, undefined);
      // What the engine asks for before it changes anything: the run's tail from a store without
      // a synchronous load, the script sandbox of a host that loads it on first need. Each is
      // fetched once and the activation made again.
      for (let attempt = 0; ; attempt++) {
        try {
          return this.activateGroups(runId, pending, groups);
        } catch (err) {
          if (attempt >= 3 || !(err instanceof EngineCallError)) throw err;
          if (err.code === 'store.not-loaded') this.tails.set(runId, await this.host.store.load(runId));
          else if (err.code === 'sandbox.not-loaded') await this.host.engine.loadScripts();
          else throw err;
        }
      }
    } finally {
      this.tails.delete(runId);
    }
  }

  /**
   * The activation of each run of a batch with its queued facts, in one call into the engine
   * (`activateBatch`): the runs it activated go to `results`; the ones left for `activateLoading`
   * are returned (an activation the engine refused or could not make yet: a tail to load, the
   * script sandbox, a plan to send again, facts of several deliveries to apply one by one).
   * Answers `undefined` when the call as a whole failed (a trap): none of the runs was activated.
   */
  private activateTogether(ready: Ready[], results: Result[]): Ready[] | undefined {
    const fresh: string[] = [];
    for (const { runId, pending } of ready) {
      if (this.hasNoTail(pending)) {
        this.tails.set(runId, undefined);
        fresh.push(runId);
      }
    }
    let outcomes;
    try {
      outcomes = this.host.engine.activateBatch(ready.map(({ runId, pending }) => this.activationOf(runId, pending, pending.groups)));
    } catch (err) {
      if (!(err instanceof EngineTrapError)) {
        // Nothing of the call is kept (an instance being rebuilt; an answer the host could not
        // split, whose runs the engine was made to forget): each run is activated alone.
        this.host.log('warn', `a batch of ${ready.length} activations failed (${(err as Error).message}); its runs are activated one at a time`);
        return ready;
      }
      this.host.log('error', `a batch of ${ready.length} activations: ${err.message}; its runs go back to the queue, to be activated one at a time on a fresh instance`);
      return undefined;
    } finally {
      for (const runId of fresh) this.tails.delete(runId);
    }
    const left: Ready[] = [];
    for (let i = 0; i < ready.length; i++) {
      const out = outcomes[i];
      if (!out.ok) {
        left.push(ready[i]);
        continue;
      }
      results.push(this.resultOf(ready[i], ready[i].pending.groups, out));
    }
    return left;
  }

  /** Activates and commits one batch; answers how many of its runs it took (the rest was requeued after a trap). */
  private async runBatch(batch: [string, Pending][]): Promise<number> {
    const results: Result[] = [];
    const refused: { id: number; error: { code: string; message: string } }[] = [];
    let taken = batch.length;
    const fail = (g: FactGroup, err: unknown) => {
      const failure = err instanceof EngineCallError ? new KernelError(err.code, err.message, err.detail) : err;
      if (g.commandId !== undefined) {
        const e = failure as { code?: string; message?: string };
        refused.push({ id: g.commandId, error: { code: e.code ?? 'command.refused', message: e.message ?? String(failure) } });
      }
      g.reject(failure);
    };
    let ready: Ready[] = [];
    for (const [runId, pending] of batch) {
      let lease: CommitEntry['lease'] | null | undefined;
      try {
        lease = await this.books.leaseFor(runId, pending);
      } catch (err) {
        for (const g of pending.groups) fail(g, err);
        continue;
      }
      if (lease !== null) ready.push({ runId, pending, lease });
    }
    // A host that records which run it is activating (a crash ledger) activates one at a time;
    // so does the batch after one whose call trapped, which finds and fails the run that traps.
    if (ready.length > 1 && !this.host.activating && !this.oneAtATime && !this.host.engine.dead) {
      const left = this.activateTogether(ready, results);
      if (left === undefined) {
        // Nothing was activated: every run goes back to the front of the queue, not lost.
        this.oneAtATime = true;
        this.requeue(ready.map((r) => [r.runId, r.pending]));
        taken -= ready.length;
        ready = [];
      } else ready = left;
    } else this.oneAtATime = false;
    for (let i = 0; i < ready.length; i++) {
      const { runId, pending } = ready[i];
      // The facts of several deliveries are applied in one activation; when the engine refuses
      // that, each delivery is applied alone, so one bad command cannot take the others down.
      const attempts = pending.groups.length > 1 && !pending.newRun ? [pending.groups, ...pending.groups.map((g) => [g])] : [pending.groups];
      let trapped = false;
      for (let a = 0; a < attempts.length; a++) {
        const groups = attempts[a];
        try {
          const out = await this.activateLoading(runId, pending, groups);
          results.push(this.resultOf(ready[i], groups, out));
          if (a === 0) break;
        } catch (err) {
          if (err instanceof EngineTrapError) {
            this.host.log('error', `run ${runId}: ${err.message}`);
            for (const g of groups) fail(g, err);
            trapped = true;
            break;
          }
          if (a === 0 && attempts.length > 1) continue;
          for (const g of groups) fail(g, err);
        }
      }
      if (trapped) {
        // The rest of the batch was not activated: it goes back to the queue, not lost.
        const rest = ready.slice(i + 1);
        this.requeue(rest.map((r) => [r.runId, r.pending]));
        taken -= rest.length;
        break;
      }
    }
    const leases = this.host.leases;
    if (refused.length > 0 && leases) await leases.refuse(refused).catch((err) => this.host.log('warn', `recording refused commands failed: ${(err as Error).message}`));
    // Read-only and idempotent calls start now, beside the commit (their outcomes wait for it) —
    // but beside a run's first commit only read-only ones, and only of a run whose id was drawn
    // here: until that commit is durable the run does not exist, so a crash would leave an effect
    // of a run no journal holds (a launch acknowledged is a run that exists), and a run id named
    // by its caller may be refused by the commit. A read-only call leaves no effect to hold.
    let early = false;
    for (const r of results) {
      if (r.commits.length === 0 || (!r.firstOfFresh && r.commits.some((c) => c.expectedSeq === 0))) continue;
      if (this.startEarly(r)) early = true;
    }
    // A call starts a few promise steps after `execute` (credentials, the tool's own awaits): one
    // turn of the event loop lets it send what it sends before a store whose commit blocks the loop
    // (SQLite) holds it for the commit's fsync.
    if (early) {
      await new Promise<void>((resolve) => nextTurn(resolve));
      await this.fold(results);
    }
    const entries: CommitEntry[] = [];
    for (const r of results) {
      // Decided once, when the entry is staged: the lease bookkeeping after the commit follows it.
      const rest = (r.rest = this.comesToRest(r.runId, r.summary, r.requests));
      const commits = mergedCommits(r.commits, this.host.commitBytesMax);
      commits.forEach((c, n) => {
        const last = n === commits.length - 1;
        entries.push({
          ...c,
          ...(r.lease ? { lease: r.lease } : {}),
          // The run's delivery target goes with its first commit (the one that carries the plan).
          ...(r.delivery && c.plan ? { delivery: r.delivery } : {}),
          ...(last ? { outcome: storedProjection(r.summary), ...(rest && r.lease ? { releaseLease: true } : {}) } : {}),
          ...(last ? { appliedCommands: r.groups.flatMap((g) => (g.commandId !== undefined ? [g.commandId] : [])) } : {}),
        });
      });
    }
    let rejected = new Map<string, string>();
    if (entries.length > 0) {
      try {
        rejected = new Map((await this.host.store.commit(entries)).map((r) => [r.runId, r.code]));
      } catch (err) {
        for (const r of results) if (r.early) this.dispatch.landed(r.early, false);
        // Nothing was written: every run of the batch goes back to the journal's truth. The
        // facts of the batch (outcomes of calls among them) are lost, so this process no longer
        // knows how its in-flight work ended: a later resume must treat it as after a restart.
        for (const r of results) {
          this.books.lost(r.runId, err);
          for (const g of r.groups) g.reject(err);
        }
        this.host.log('error', `commit of ${entries.length} activation(s) failed: ${(err as Error).message}`);
        return taken;
      }
    }
    for (const r of results) {
      const code = rejected.get(r.runId);
      if (code && r.early) this.dispatch.landed(r.early, false);
      if (code === 'store.fenced') {
        this.books.fenced(r.runId);
        const fenced = new KernelError('run.fenced', `run ${r.runId} is owned by another process now; this process's activation was discarded`);
        for (const g of r.groups) g.reject(fenced);
        continue;
      }
      if (code) {
        this.books.evict(r.runId);
        const conflict = new KernelError('store.conflict', `run ${r.runId} was changed by another writer; its activation was discarded`);
        for (const g of r.groups) g.reject(conflict);
        continue;
      }
      this.committed({ runId: r.runId, groups: r.groups, summary: r.summary, requests: r.requests, cancels: r.cancels, ...(r.lease ? { lease: r.lease } : {}), rest: r.rest === true, wrote: r.commits.length > 0 });
    }
    return taken;
  }

  /** Starts the result's read-only and idempotent calls (read-only ones only beside a run's first commit) beside its commit; answers whether any started. */
  private startEarly(r: Result): boolean {
    for (const request of r.requests) {
      if (this.dispatch.dispatchEarly(request, r.firstOfFresh === true)) (r.early ??= []).push(request.invocationId);
    }
    return r.early !== undefined;
  }

  /**
   * Folds outcomes into the commit of their requests: when every call an activation asked for
   * started early and has already ended (a tool answered from memory, a model that answers at
   * once), the run is activated again with their outcomes before anything is written, and the
   * two activations' commits go to the store in one transaction — one commit where there would
   * have been two. Safe by the calls' effect class, as their early start is: if that transaction
   * does not land, neither the requests nor their outcomes were ever journaled, the engine's copy
   * of the run is dropped, and the run goes on from the journal, where these calls are asked for
   * again when they are asked for at all. At most `foldActivationsMax` activations a run per commit,
   * each waiting one turn of the event loop for its calls, so a commit is never held for long.
   */
  private async fold(results: Result[]): Promise<void> {
    for (let step = 1; step < foldActivationsMax; step++) {
      let started = false;
      for (const r of results) {
        const ids = r.early;
        if (!ids || ids.length !== r.requests.length || r.cancels.length > 0 || this.books.closed() || this.host.engine.dead) continue;
        const facts = this.dispatch.readyFacts(ids);
        if (!facts) continue;
        let out: { summary: ActivationSummary } & StagedWork;
        try {
          out = this.activateGroups(r.runId, { groups: [] }, [{ facts, resolve: () => undefined, reject: () => undefined }]);
        } catch {
          // The engine dropped its copy of the run: the outcomes go to it the usual way, after the commit.
          continue;
        }
        this.dispatch.take(ids);
        r.commits.push(...out.commits);
        r.summary = out.summary;
        r.requests = stillInFlight(out.requests, out.summary);
        r.cancels = out.cancels;
        r.early = undefined;
        if (this.startEarly(r)) started = true;
      }
      if (!started) return;
      await new Promise<void>((resolve) => nextTurn(resolve));
    }
  }

  /**
   * What a landed commit staged is carried out, in this order: the run's books (lease, known),
   * the calls it cancelled and asked for, its next wake-up, its parent when it ended, and last
   * whoever waits on it.
   */
  private committed(r: Committed): void {
    this.books.recorded(r);
    for (const c of r.cancels) this.dispatch.cancel(c.invocationId, c.reason);
    for (const request of r.requests) this.dispatch.dispatch(request);
    this.wakeUps.arm(r.runId, r.summary);
    if (terminalStatuses.has(r.summary.status)) {
      this.books.ended(r.runId);
      this.children.ended(r.runId, r.summary);
    }
    this.books.notify(r);
  }

  /**
   * A run comes to rest when it ended, or is paused with nothing in flight here but approvals and
   * no timer: its lease is given up with the commit, so that any process may act on it next.
   */
  private comesToRest(runId: string, summary: ActivationSummary, requests: readonly GatewayRequest[]): boolean {
    if (terminalStatuses.has(summary.status)) return true;
    return summary.status === 'paused' && summary.wakeAt === undefined && this.dispatch.busyFor(runId) === 0 && requests.every((r) => r.kind === 'approval');
  }
}

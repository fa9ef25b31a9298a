// The kernel every host shares: the public face of the scheduler (queue, batching, group commit;
// kernel-scheduler.ts), dispatch (gateway requests, cancellations, late outcomes;
// kernel-dispatch.ts), child runs (kernel-children.ts) and wake-ups (kernel-wake-ups.ts). It
// turns facts into activations, commits the staged work of several activations in one store
// transaction, and only then carries out the gateway requests they staged. Outcomes come back as
// facts of later activations. Run ownership (leases, takeovers, the inbox) is decided here.
//
// Order per flush: activate every run with queued facts -> store.commit(all commits) -> for the
// commits that landed: dispatch requests and cancels, arm wake-ups, notify waiters.
import type { EngineInstance } from './engine-instance.js';
import type { Gateway } from './gateway.js';
import { ChildRuns } from './kernel-children.js';
import { captureModeOf, defaultCapture, Dispatcher, type CapturePolicy } from './kernel-dispatch.js';
import { KernelError } from './kernel-errors.js';
import { nextTurn, Scheduler, type Committed, type Pending } from './kernel-scheduler.js';
import { WakeUps } from './kernel-wake-ups.js';
import { LeaseKeeper, type LeaseOptions } from './leases.js';
import { approvalFact } from './operator.js';
import type { LeaseGrant, OperatorCommand } from './ownership-store.js';
import { outcomeOfRecord, projectionOfRecord, type RunOutcome } from './projection.js';
import type { CommitEntry, JournalStore, RunRecord, RunTail } from './store.js';
import { RunTraceIds, traceparentOfCorrelation } from './trace-context.js';
import { terminalStatuses, type ActivationSummary, type Authority, type ExecutionPlan, type Fact, type HostLog, type RunProjection } from './types.js';

export { captureModeOf, defaultCapture, KernelError, type CapturePolicy, type RunOutcome };

/** How long a closing host waits for the real outcomes of calls it cancelled. */
const lateEvidenceWaitMs = 1_000;

export interface KernelOptions {
  /** Capture of capability payloads; needs `sha256` and a store with `putArtifact`. */
  capture?: CapturePolicy;
  /** `sha256:<hex>` of bytes (node:crypto in Node; injected so the kernel stays platform-neutral). */
  sha256?: (bytes: Uint8Array) => string;
  store: JournalStore;
  engine: EngineInstance;
  gateway: Gateway;
  log: HostLog;
  now?: () => number;
  /**
   * Resolves the authority of a run; consulted at launch and again on every resume
   * (`resuming`), where `undefined` keeps the run's authority as it is.
   */
  authority: (context: { runId: string; workflowId: string; requested?: Authority; resuming?: boolean }) => Authority | undefined;
  /** When false, the host drives wake-ups itself with `wakeDue()` (the router's cadence). */
  timers?: boolean;
  /**
   * `immediate` (default): queued facts are activated on the next turn of the event loop.
   * `manual`: nothing is activated until the host calls `flush(maxRuns)` (the router's cadence
   * bounds the frontier work of each cycle that way); `close()` flushes what is left.
   */
  flushMode?: 'immediate' | 'manual';
  /**
   * The most bytes (UTF-8) of events one activation may commit (see `ActivationRequest.commitBytesMax`);
   * no bound when absent.
   */
  commitBytesMax?: number;
  /**
   * Told around each activation: `run` before the engine is called, then `undefined` once it has
   * returned (or thrown). A host that must survive a run that kills its process (the router's
   * crash marker) records it outside the journal; nothing else may happen in it.
   */
  activating?: (runId: string | undefined) => void;
  /** Told whenever facts are queued (with `flushMode: 'manual'`, the host's loop may be asleep). */
  queued?: () => void;
  /**
   * Run ownership (stores with `RunOwnership`): this process's owner id, lease time-to-live and
   * inbox polling. Without it (or with a store without ownership) the kernel commits without a
   * lease, which a store accepts only while nobody holds a live lease of the run.
   */
  leases?: LeaseOptions;
  /**
   * Whether a read-only or idempotent tool or agent call may start while the commit that records
   * its request is on its way (default true). Its outcome waits for that commit; a commit that
   * does not land aborts it; an outcome ready before the commit is written is folded into it.
   * `false`: every call starts only after its commit (docs/durability.md).
   */
  dispatchBeforeCommit?: boolean;
}

type Listener = (summary: ActivationSummary) => void;

export class Kernel {
  private readonly scheduler: Scheduler;
  private readonly dispatcher: Dispatcher;
  private readonly children: ChildRuns;
  private readonly wakeUps: WakeUps;
  private readonly listeners = new Map<string, Set<Listener>>();
  /** Called after every landed commit of any run (projections such as a trace exporter). */
  private readonly commitListeners = new Set<(runId: string, summary: ActivationSummary) => void>();
  /** `waitFor` calls to fail when a fact of their run could not be made durable here. */
  private readonly lossListeners = new Map<string, Set<(err: unknown) => void>>();
  private readonly plans = new Map<string, ExecutionPlan>();
  /** Runs this process has activated and that have not ended: their in-flight work is known to this process. */
  private readonly known = new Set<string>();
  /** Runs whose lease this process took from another owner; their next activation resumes them as after a restart. */
  private readonly takeovers = new Set<string>();
  /** Timers of `waitFor` calls that follow runs through the store. */
  private readonly polls = new Set<ReturnType<typeof setTimeout>>();
  private closed = false;
  private stopping = false;
  readonly now: () => number;
  /** Leases of the runs this process owns (stores with ownership). */
  readonly leases: LeaseKeeper | undefined;

  constructor(private readonly options: KernelOptions) {
    this.now = options.now ?? Date.now;
    const ownership = options.store.ownership;
    this.leases = ownership && options.leases ? new LeaseKeeper(ownership, options.leases, this.now, options.log, (runId, command) => this.applyCommand(runId, command)) : undefined;
    this.leases?.onLost((runId) => this.forget(runId, 'its lease was taken over by another process'));
    const { store, engine, log } = options;
    const deliver = (runId: string, fact: Fact) => this.deliver(runId, fact);
    this.wakeUps = new WakeUps(
      {
        now: this.now,
        wake: (runId) => this.deliver(runId, { type: 'resume-requested', by: 'timer', afterRestart: false }).catch((err) => log('warn', `wake of ${runId} failed: ${(err as Error).message}`)),
      },
      options.timers !== false,
    );
    this.children = new ChildRuns({
      log,
      getRun: async (runId) => store.getRun(runId),
      outcomeOf: (record) => this.outcomeOf(record),
      planOf: (runId) => this.planOf(runId),
      authority: options.authority,
      knows: (runId) => this.known.has(runId),
      launch: (args) => this.launch(args),
      traceOf: (runId) => this.traceOf(runId),
      resume: (runId, by, authority) => this.resume(runId, by, authority),
      deliver,
    });
    this.dispatcher = new Dispatcher({
      gateway: options.gateway,
      store,
      log,
      capture: options.capture ?? defaultCapture,
      ...(options.sha256 ? { sha256: options.sha256 } : {}),
      ...(this.leases ? { leases: this.leases } : {}),
      children: this.children,
      planOf: (runId) => this.planOf(runId),
      deliver,
      closed: () => this.closed,
      stopping: () => this.stopping,
      dispatchBeforeCommit: options.dispatchBeforeCommit !== false,
    });
    this.scheduler = new Scheduler({
      options: {
        engine,
        store,
        log,
        now: this.now,
        ...(this.leases ? { leases: this.leases } : {}),
        manual: options.flushMode === 'manual',
        ...(options.commitBytesMax !== undefined ? { commitBytesMax: options.commitBytesMax } : {}),
        ...(options.activating ? { activating: options.activating } : {}),
        ...(options.queued ? { queued: options.queued } : {}),
      },
      dispatch: this.dispatcher,
      children: this.children,
      wakeUps: this.wakeUps,
      books: {
        closed: () => this.closed,
        leaseFor: (runId, pending) => this.leaseFor(runId, pending),
        evict: (runId) => this.safeEvict(runId),
        lost: (runId, err) => {
          this.safeEvict(runId);
          this.known.delete(runId);
          for (const l of [...(this.lossListeners.get(runId) ?? [])]) l(err);
        },
        fenced: (runId) => {
          this.leases?.drop(runId);
          this.forget(runId, 'a commit was refused by the fencing check');
        },
        recorded: (r) => this.recorded(r),
        ended: (runId) => this.plans.delete(runId),
        notify: (r) => this.notify(r),
      },
    });
  }

  get store(): JournalStore {
    return this.options.store;
  }

  /**
   * The engine's synchronous `load`: a tail loaded ahead by the kernel, else the store's own
   * synchronous load; a store that has neither makes the kernel load the tail and try again.
   */
  loadForEngine(runId: string): RunTail | undefined {
    return this.scheduler.loadForEngine(runId);
  }

  /** Drops what this process knows of a run it no longer owns. */
  private forget(runId: string, why: string): void {
    this.options.log('warn', `run ${runId}: ${why}; this process stops acting on it`);
    this.known.delete(runId);
    this.safeEvict(runId);
    this.wakeUps.disarm(runId);
  }

  /** Starts a new run; resolves when `run.accepted` is durable. */
  launch(args: { runId: string; plan: ExecutionPlan; templateKey?: string; input: unknown; authority: Authority; parentRunId?: string; correlation?: unknown; timeoutMs?: number; actor?: string; /** The lease a worker claimed the queued run with. */ epoch?: number; /** Where the run's results are delivered (kept by a store with an outbox). */ delivery?: CommitEntry['delivery']; /** The run id was drawn at random by this process just now (see `Pending.newRun.fresh`). */ fresh?: boolean; /** When the run was queued for a worker (ms): journaled as `run.queued`. */ queuedAt?: number }): Promise<ActivationSummary> {
    const fact: Fact = {
      type: 'run-requested',
      input: args.input,
      authority: args.authority,
      ...(args.parentRunId ? { parentRunId: args.parentRunId } : {}),
      ...(args.correlation !== undefined ? { correlation: args.correlation } : {}),
      ...(args.timeoutMs !== undefined ? { timeoutMs: args.timeoutMs } : {}),
      ...(args.queuedAt !== undefined ? { queuedAt: args.queuedAt } : {}),
    };
    // The engine must know a `metadata` run from its first event on (plans with `capture-v2`).
    if (captureModeOf(args.plan, this.options.capture ?? defaultCapture) === 'metadata' && fact.type === 'run-requested') fact.capture = 'metadata';
    if (this.scheduler.has(args.runId)) return Promise.reject(new KernelError('run.exists', `run ${args.runId} is already being started`));
    this.plans.set(args.runId, args.plan);
    return this.scheduler.enqueue(args.runId, [fact], args.actor, { plan: args.plan, templateKey: args.templateKey, epoch: args.epoch, ...(args.delivery ? { delivery: args.delivery } : {}), ...(args.fresh ? { fresh: true } : {}) });
  }

  /** Delivers a fact to a run; resolves with the summary of the activation that applied it. */
  deliver(runId: string, fact: Fact, actor?: string): Promise<ActivationSummary> {
    return this.scheduler.enqueue(runId, [fact], actor);
  }

  /** Resumes a run, telling the engine whether this process lost its in-flight work. */
  resume(runId: string, by: string, authority: Authority | undefined): Promise<ActivationSummary> {
    return this.deliver(runId, this.resumeFact(runId, by, authority), by);
  }

  private resumeFact(runId: string, by: string, authority?: Authority): Fact {
    return { type: 'resume-requested', by, ...(authority ? { authority } : {}), afterRestart: !this.known.has(runId), effects: this.options.gateway.effects() };
  }

  /**
   * Applies an inbox command as the run's owner: a resume with the authority resolved now, then
   * the command's own fact. The commit that holds them marks the command applied.
   */
  private async applyCommand(runId: string, command: { id: number; command: OperatorCommand }): Promise<ActivationSummary> {
    const c = command.command;
    const by = c.type === 'late-outcome' || c.type === 'resume' ? c.by : `operator:${c.by}`;
    const facts: Fact[] = [];
    if (c.type !== 'late-outcome') {
      let plan: ExecutionPlan;
      try {
        plan = await this.planOf(runId);
      } catch (err) {
        // A run whose stored journal is damaged never takes a command: it is refused with the
        // store's error (its poster is told), not read again at every poll of the inbox.
        const e = err as { code?: string; message?: string };
        if (e.code === 'store.corrupt') await this.leases?.refuse([{ id: command.id, error: { code: e.code, message: e.message ?? String(err) } }]);
        throw err;
      }
      const authority = this.options.authority({ runId, workflowId: plan.templates[plan.root].template.metadata.id, resuming: true });
      facts.push(this.resumeFact(runId, by, authority));
    }
    switch (c.type) {
      case 'approve':
        facts.push(approvalFact(c.invocationId, c));
        break;
      case 'resolve': {
        const { type: _, ...fields } = c;
        facts.push({ type: 'outcome-resolved', ...fields });
        break;
      }
      case 'cancel':
        facts.push({ type: 'cancel-requested', reason: c.reason, by: c.by });
        break;
      case 'resume':
        break;
      case 'late-outcome':
        facts.push({ type: 'capability-completed', invocationId: c.invocationId, ok: c.ok, ...(c.ok ? { output: c.output } : { error: c.error }) });
        break;
    }
    return this.scheduler.enqueue(runId, facts, by, undefined, command.id);
  }

  /** Called when a run's activation summary changes; returns an unsubscribe function. */
  watch(runId: string, listener: Listener): () => void {
    let set = this.listeners.get(runId);
    if (!set) this.listeners.set(runId, (set = new Set()));
    set.add(listener);
    return () => {
      set!.delete(listener);
      if (set!.size === 0) this.listeners.delete(runId);
    };
  }

  /**
   * Called after every commit of any run of this process is durable, with the run id and its
   * summary. The listener runs on the commit loop: it must only note the run and return (do the
   * work on a later turn). Returns an unsubscribe function.
   */
  onCommit(listener: (runId: string, summary: ActivationSummary) => void): () => void {
    this.commitListeners.add(listener);
    return () => {
      this.commitListeners.delete(listener);
    };
  }

  /**
   * Waits until a run is terminal (or, with `orPaused`, paused). A run this process does not own
   * is followed through the store (another process is running it).
   */
  waitFor(runId: string, orPaused: boolean): Promise<RunOutcome> {
    return new Promise((resolve, reject) => {
      let poll: ReturnType<typeof setTimeout> | undefined;
      const done = (status: string) => terminalStatuses.has(status) || (orPaused && status === 'paused' && !this.scheduler.has(runId) && !this.dispatcher.dispatchingFor(runId));
      // A pending poll is cleared and forgotten: `polls` must not keep one timer per wait ever made.
      const unpoll = () => {
        if (!poll) return;
        clearTimeout(poll);
        this.polls.delete(poll);
        poll = undefined;
      };
      const finish = (outcome: RunOutcome) => {
        stop();
        unpoll();
        resolve(outcome);
      };
      const unwatch = this.watch(runId, (s) => {
        if (done(s.status)) finish({ runId, status: s.status, pausedReason: s.pausedReason, ...(s.status === 'paused' && s.attention ? { attention: s.attention } : {}), output: s.result, error: s.error, seq: s.seq });
      });
      // A fact of the run that this process could not commit (a full disk, a lost database) is a
      // failure of the wait: the run's outcome here is unknown, and saying nothing would hang.
      const lost = (err: unknown) => {
        stop();
        unpoll();
        reject(err);
      };
      let losses = this.lossListeners.get(runId);
      if (!losses) this.lossListeners.set(runId, (losses = new Set()));
      losses.add(lost);
      const stop = () => {
        unwatch();
        losses!.delete(lost);
        if (losses!.size === 0) this.lossListeners.delete(runId);
      };
      const check = async () => {
        if (poll) this.polls.delete(poll);
        poll = undefined;
        if (this.closed) return;
        try {
          const record = await this.options.store.getRun(runId);
          if (record && done(record.status) && !this.scheduler.has(runId) && !this.scheduler.flushing) return finish(await this.outcomeOf(record));
        } catch (err) {
          stop();
          return reject(err);
        }
        // Followed through the store while another process (or nobody yet) owns the run.
        if (!this.closed) this.polls.add((poll = setTimeout(check, this.leases?.pollMs ?? 100)));
      };
      // A run this process is carrying out (facts queued, or calls of it in flight here) tells
      // the listener of its every commit: the store is read only by the poll, should this process
      // stop carrying it out (fenced, taken over). Any other run may have ended already: read now.
      if (!this.closed && (this.scheduler.has(runId) || this.dispatcher.busyFor(runId) > 0)) this.polls.add((poll = setTimeout(check, this.leases?.pollMs ?? 100)));
      else void check();
    });
  }

  /** The outcome of a run as the store's projection tells it (terminal or paused). */
  async outcomeFromStore(runId: string): Promise<RunOutcome> {
    const record = await this.options.store.getRun(runId);
    if (!record) throw new KernelError('run.not-found', `run ${runId} does not exist`);
    return this.outcomeOf(record);
  }

  private async outcomeOf(record: RunRecord): Promise<RunOutcome> {
    return outcomeOfRecord(record, await this.projectionOf(record));
  }

  /** A stored run's projection (derived once from its journal when it was recorded without one). */
  projectionOf(record: RunRecord): Promise<RunProjection> {
    return projectionOfRecord(this.options.store, this.options.engine, record);
  }

  /** A run's record and projection; `run.not-found` when it does not exist. */
  async projection(runId: string): Promise<{ record: RunRecord; projection: RunProjection }> {
    const record = await this.options.store.getRun(runId);
    if (!record) throw new KernelError('run.not-found', `run ${runId} does not exist`);
    return { record, projection: await this.projectionOf(record) };
  }


  /** Activates queued facts now (see `Scheduler.flush`); resolves with the number of runs activated. */
  flush(maxRuns = Infinity): Promise<number> {
    return this.scheduler.flush(maxRuns);
  }

  /**
   * The lease a run's commit is staged under, taking it when this process does not hold it yet.
   * A run taken over from another owner (or whose journal changed since this process last held
   * it) is dropped from the engine and resumed as after a restart, with its authority resolved
   * again. Answers `null` when the run cannot be owned here (the groups were rejected).
   */
  private async leaseFor(runId: string, pending: Pending): Promise<CommitEntry['lease'] | null | undefined> {
    const leases = this.leases;
    if (!leases) return undefined;
    const skew = leases.clockRefusal();
    // A run this process owns already keeps its lease (renewed by heartbeat); it takes no new one.
    if (skew && !leases.held(runId)) {
      const err = new KernelError(skew.code, skew.message);
      for (const g of pending.groups) g.reject(err);
      return null;
    }
    if (pending.newRun) return leases.forNewRun(runId, pending.newRun.epoch);
    if (!leases.held(runId)) {
      const grant = await this.takeLease(runId);
      if (!grant.ok) {
        if (grant.code !== 'lease.held') return undefined;
        const err = new KernelError('run.owned-elsewhere', grant.message, grant.holder);
        for (const g of pending.groups) g.reject(err);
        return null;
      }
    }
    if (this.takeovers.delete(runId)) {
      // The takeover is the activation's first fact: a resume that leads it carries it, else one is
      // put first. Any other resume of the same activation (a worker's resume queued beside the
      // operator's command it took the run for) is no restart: after the command it would abandon
      // the attempt the command just started.
      const facts = pending.groups.flatMap((g) => g.facts);
      const leading = facts[0]?.type === 'resume-requested' ? facts[0] : undefined;
      for (const f of facts) if (f.type === 'resume-requested') f.afterRestart = f === leading;
      if (!leading) {
        const plan = await this.planOf(runId);
        const authority = this.options.authority({ runId, workflowId: plan.templates[plan.root].template.metadata.id, resuming: true });
        pending.groups[0].facts.unshift({ type: 'resume-requested', by: 'takeover', ...(authority ? { authority } : {}), afterRestart: true, effects: this.options.gateway.effects() });
      }
    } else if (this.known.has(runId)) {
      // A resume queued while this process did not know the run yet (a worker's resume after its
      // claim, while the takeover's own activation was committing) says its in-flight work was
      // lost. By now this process carries the run's calls out itself: abandoning them would leave
      // them running, unrecorded, beside the journal that says they never finished.
      for (const g of pending.groups) for (const f of g.facts) if (f.type === 'resume-requested' && f.afterRestart) f.afterRestart = false;
    }
    return leases.held(runId);
  }

  /**
   * Takes a run's lease for this process. A run taken over from another owner (or whose journal
   * may have changed since this process last held it) is dropped from the engine; its next
   * activation resumes it as after a restart, with its authority resolved again.
   */
  async takeLease(runId: string): Promise<LeaseGrant> {
    if (!this.leases) return { ok: true, epoch: 0, previousEpoch: 0 };
    const grant = await this.leases.acquire(runId);
    if (!grant.ok) return grant;
    if (!grant.continued) {
      this.known.delete(runId);
      this.safeEvict(runId);
    }
    if (!this.known.has(runId)) this.takeovers.add(runId);
    return grant;
  }

  /** A worker claimed a run whose owner is gone: its next activation is a takeover. */
  claimed(runId: string, epoch: number): void {
    this.leases?.committed(runId, epoch);
    this.known.delete(runId);
    this.safeEvict(runId);
    this.takeovers.add(runId);
  }

  /** A landed commit in the books: the run's lease renewed or given up, the run known here or not. */
  private recorded(r: Committed): void {
    if (r.lease && r.wrote) {
      if (r.rest) this.leases?.released(r.runId, r.lease.epoch);
      else this.leases?.committed(r.runId, r.lease.epoch);
    }
    // An ended run has no in-flight work left to know about (a resume of it changes nothing), so
    // it is not kept: a process that runs millions of runs would hold every id it ever ran.
    if (terminalStatuses.has(r.summary.status)) this.known.delete(r.runId);
    else this.known.add(r.runId);
  }

  /** Whoever waits on the run learns of a landed commit (after the scheduler carried it out). */
  private notify(r: Committed): void {
    for (const g of r.groups) g.resolve(r.summary);
    for (const l of [...(this.listeners.get(r.runId) ?? [])]) l(r.summary);
    if (r.wrote) for (const l of this.commitListeners) l(r.runId, r.summary);
  }

  private safeEvict(runId: string): void {
    try {
      this.options.engine.evict(runId);
    } catch {
      // A dead instance holds nothing to evict.
    }
  }

  /** Runs whose wake-up time has come (for hosts that drive time themselves). */
  dueWakeups(limit: number): string[] {
    return this.wakeUps.due(limit);
  }

  /** The earliest wake-up any run asked for (ms, the kernel's clock), `undefined` when none did. */
  nextWakeup(): number | undefined {
    return this.wakeUps.next();
  }

  wake(runId: string): Promise<ActivationSummary> {
    this.wakeUps.taken(runId);
    return this.deliver(runId, { type: 'resume-requested', by: 'timer', afterRestart: false });
  }

  /** A run's trace ids (hosts/core/trace-context.ts), from its first event's correlation. */
  private async traceOf(runId: string): Promise<RunTraceIds | undefined> {
    const sha256 = this.options.sha256;
    if (!sha256) return undefined;
    const page = await this.options.store.readEvents(runId, 0, 1);
    const first = page.events[0] ? (JSON.parse(page.events[0]) as { correlation?: unknown }) : undefined;
    const encoder = new TextEncoder();
    return new RunTraceIds(runId, traceparentOfCorrelation(first?.correlation), (text) => sha256(encoder.encode(text)));
  }

  private async planOf(runId: string): Promise<ExecutionPlan> {
    let plan = this.plans.get(runId);
    if (!plan) {
      const tail = await this.options.store.load(runId);
      if (!tail) throw new KernelError('run.not-found', `run ${runId} does not exist`);
      plan = JSON.parse(new TextDecoder().decode(tail.plan)) as ExecutionPlan;
      this.plans.set(runId, plan);
    }
    return plan;
  }

  /** Calls this process is carrying out now (not approvals waiting for a person). */
  get callsInFlight(): number {
    return this.dispatcher.callsInFlight;
  }
  /**
   * A call the host runs itself outside dispatch (an attempt recovery runs again): the engine's
   * cancellation of that invocation aborts the returned signal, as for a dispatched call.
   */
  adoptCall(invocationId: string): { signal: AbortSignal; release(): void } {
    return this.dispatcher.adopt(invocationId);
  }

  /** Resolves when no call is in flight any more, or after `ms`; answers whether none is left. */
  async drain(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.callsInFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, Math.min(20, Math.max(1, deadline - Date.now()))));
    while (this.scheduler.flushing || this.scheduler.size > 0) await new Promise<void>((r) => nextTurn(r));
    return this.callsInFlight === 0;
  }

  /**
   * Stops timers and refuses new work. Calls still in flight are handed back: they are aborted,
   * their outcomes are not recorded here, and the leases are given up, so the next owner treats
   * them as unknown (reissued when safe, `needs_attention` otherwise).
   */
  async close(options: { abortInflight?: boolean } = {}): Promise<void> {
    this.wakeUps.stop();
    for (const t of this.polls) clearTimeout(t);
    this.polls.clear();
    // Cancelled calls whose real outcome is about to arrive: recorded as evidence if it comes
    // within a moment (a tool that ignores its signal is not waited for).
    await this.dispatcher.settleLate(lateEvidenceWaitMs);
    while (this.scheduler.flushing || this.scheduler.size > 0) {
      if (this.options.flushMode === 'manual' && !this.scheduler.flushing) await this.scheduler.flush();
      else await new Promise<void>((r) => nextTurn(r));
    }
    this.stopping = true;
    if (options.abortInflight) this.dispatcher.abortAll();
    this.closed = true;
    await this.leases?.stop();
  }
}

// The scheduler every host shares. It turns facts into activations, commits the staged work of
// several activations in one store transaction (group commit), and only then carries out the
// gateway requests they staged. Outcomes come back as facts of later activations.
//
// Order per flush: activate every run with queued facts -> store.commit(all commits) -> for the
// commits that landed: dispatch requests and cancels, arm wake-ups, notify waiters.
import { EngineCallError, EngineTrapError, type EngineInstance } from './engine-instance.js';
import { outcomeOfThrown, type Gateway } from './gateway.js';
import { LeaseKeeper, type LeaseOptions } from './leases.js';
import { approvalFact } from './operator.js';
import type { LeaseGrant, OperatorCommand } from './ownership-store.js';
import { outcomeOfRecord, projectionOfRecord, storedProjection, type RunOutcome } from './projection.js';
import { StoreError, type CommitEntry, type JournalStore, type RunRecord, type RunTail } from './store.js';
import { terminalStatuses, type ActivationSummary, type Authority, type CapabilityOutcome, type ExecutionPlan, type Fact, type GatewayRequest, type HostLog, type RunProjection } from './types.js';

export type { RunOutcome };

/**
 * What a deployment keeps of capability payloads. `metadata`: digests and sizes only (recorded
 * replay is refused); `standard`: payloads up to `maxArtifactBytes`, larger ones redacted;
 * `replayable`: every payload. Payloads above `inlineBytesMax` are stored once as artifacts and
 * events carry their digest. A template's `spec.policies.capture` can only narrow this.
 */
export interface CapturePolicy {
  mode: 'metadata' | 'standard' | 'replayable';
  maxArtifactBytes: number;
  inlineBytesMax: number;
}

export const defaultCapture: CapturePolicy = { mode: 'replayable', maxArtifactBytes: 16 * 1024 * 1024, inlineBytesMax: 16 * 1024 };

const captureOrder = ['metadata', 'standard', 'replayable'] as const;

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
  /** Resolves the authority of a run; consulted at launch and again on every resume. */
  authority: (context: { runId: string; workflowId: string; requested?: Authority }) => Authority;
  /** When false, the host drives wake-ups itself with `wakeDue()` (the router's cadence). */
  timers?: boolean;
  /**
   * `immediate` (default): queued facts are activated on the next turn of the event loop.
   * `manual`: nothing is activated until the host calls `flush(maxRuns)` (the router's cadence
   * bounds the frontier work of each cycle that way); `close()` flushes what is left.
   */
  flushMode?: 'immediate' | 'manual';
  /**
   * Run ownership (stores with `RunOwnership`): this process's owner id, lease time-to-live and
   * inbox polling. Without it (or with a store without ownership) the kernel commits without a
   * lease, which a store accepts only while nobody holds a live lease of the run.
   */
  leases?: LeaseOptions;
}

/** Facts of one `deliver` call: applied together, refused together. */
interface FactGroup {
  facts: Fact[];
  actor?: string;
  /** Inbox command this group applies (marked applied in the commit). */
  commandId?: number;
  resolve: (s: ActivationSummary) => void;
  reject: (e: unknown) => void;
}

interface Pending {
  groups: FactGroup[];
  newRun?: { plan: ExecutionPlan; templateKey?: string; epoch?: number };
}

type Listener = (summary: ActivationSummary) => void;

export class KernelError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly detail?: unknown,
  ) {
    super(message);
    this.name = 'KernelError';
  }
}

export class Kernel {
  private readonly queue = new Map<string, Pending>();
  private flushing = false;
  private flushScheduled = false;
  private readonly controllers = new Map<string, AbortController>();
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly wakeAts = new Map<string, number>();
  private readonly listeners = new Map<string, Set<Listener>>();
  /** `waitFor` calls to fail when a fact of their run could not be made durable here. */
  private readonly lossListeners = new Map<string, Set<(err: unknown) => void>>();
  private readonly children = new Map<string, { parentRunId: string }>();
  private readonly plans = new Map<string, ExecutionPlan>();
  /** Runs this process has activated: their in-flight work is known to this process. */
  private readonly known = new Set<string>();
  private readonly inflightDispatches = new Set<Promise<unknown>>();
  /** Calls in flight per run that need this process to stay the owner (approvals do not). */
  private readonly busy = new Map<string, number>();
  /** Every dispatch in flight per run, approvals included: a run is settled only once none is left. */
  private readonly dispatching = new Map<string, number>();
  /** Runs whose lease this process took from another owner; their next activation resumes them as after a restart. */
  private readonly takeovers = new Set<string>();
  /** Tails loaded ahead of a cold activation, for stores that cannot answer `load` synchronously. */
  private readonly tails = new Map<string, RunTail | undefined>();
  private closed = false;
  readonly now: () => number;
  /** Leases of the runs this process owns (stores with ownership). */
  readonly leases: LeaseKeeper | undefined;

  constructor(private readonly options: KernelOptions) {
    this.now = options.now ?? Date.now;
    const ownership = options.store.ownership;
    this.leases = ownership && options.leases ? new LeaseKeeper(ownership, options.leases, this.now, options.log, (runId, command) => this.applyCommand(runId, command)) : undefined;
    this.leases?.onLost((runId) => this.forget(runId, 'its lease was taken over by another process'));
  }

  get store(): JournalStore {
    return this.options.store;
  }

  /**
   * The engine's synchronous `load`: a tail loaded ahead by the kernel, else the store's own
   * synchronous load; a store that has neither makes the kernel load the tail and try again.
   */
  loadForEngine(runId: string): RunTail | undefined {
    if (this.tails.has(runId)) {
      const tail = this.tails.get(runId);
      this.tails.delete(runId);
      return tail;
    }
    if (this.options.store.loadSync) return this.options.store.loadSync(runId);
    throw new StoreError('store.not-loaded', `run ${runId} must be loaded before its activation`);
  }

  /** Drops what this process knows of a run it no longer owns. */
  private forget(runId: string, why: string): void {
    this.options.log('warn', `run ${runId}: ${why}; this process stops acting on it`);
    this.known.delete(runId);
    this.safeEvict(runId);
    this.disarm(runId);
  }

  /** Starts a new run; resolves when `run.accepted` is durable. */
  launch(args: { runId: string; plan: ExecutionPlan; templateKey?: string; input: unknown; authority: Authority; parentRunId?: string; correlation?: unknown; timeoutMs?: number; actor?: string; /** The lease a worker claimed the queued run with. */ epoch?: number }): Promise<ActivationSummary> {
    const fact: Fact = {
      type: 'run-requested',
      input: args.input,
      authority: args.authority,
      ...(args.parentRunId ? { parentRunId: args.parentRunId } : {}),
      ...(args.correlation !== undefined ? { correlation: args.correlation } : {}),
      ...(args.timeoutMs !== undefined ? { timeoutMs: args.timeoutMs } : {}),
    };
    // The engine must know a `metadata` run from its first event on (plans with `capture-v2`).
    if (captureModeOf(args.plan, this.options.capture ?? defaultCapture) === 'metadata' && fact.type === 'run-requested') fact.capture = 'metadata';
    if (this.queue.has(args.runId)) return Promise.reject(new KernelError('run.exists', `run ${args.runId} is already being started`));
    this.plans.set(args.runId, args.plan);
    return this.enqueue(args.runId, [fact], args.actor, { plan: args.plan, templateKey: args.templateKey, epoch: args.epoch });
  }

  /** Delivers a fact to a run; resolves with the summary of the activation that applied it. */
  deliver(runId: string, fact: Fact, actor?: string): Promise<ActivationSummary> {
    return this.enqueue(runId, [fact], actor);
  }

  /** Resumes a run, telling the engine whether this process lost its in-flight work. */
  resume(runId: string, by: string, authority: Authority): Promise<ActivationSummary> {
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
      const plan = await this.planOf(runId);
      const authority = this.options.authority({ runId, workflowId: plan.templates[plan.root].template.metadata.id });
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
    return this.enqueue(runId, facts, by, undefined, command.id);
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
   * Waits until a run is terminal (or, with `orPaused`, paused). A run this process does not own
   * is followed through the store (another process is running it).
   */
  waitFor(runId: string, orPaused: boolean): Promise<RunOutcome> {
    return new Promise((resolve, reject) => {
      let poll: ReturnType<typeof setTimeout> | undefined;
      const done = (status: string) => terminalStatuses.has(status) || (orPaused && status === 'paused' && !this.hasQueued(runId) && !this.dispatching.has(runId));
      const finish = (outcome: RunOutcome) => {
        stop();
        if (poll) clearTimeout(poll);
        resolve(outcome);
      };
      const unwatch = this.watch(runId, (s) => {
        if (done(s.status)) finish({ runId, status: s.status, pausedReason: s.pausedReason, output: s.result, error: s.error, seq: s.seq });
      });
      // A fact of the run that this process could not commit (a full disk, a lost database) is a
      // failure of the wait: the run's outcome here is unknown, and saying nothing would hang.
      const lost = (err: unknown) => {
        stop();
        if (poll) clearTimeout(poll);
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
          if (record && done(record.status) && !this.queue.has(runId) && !this.flushing) return finish(await this.outcomeOf(record));
        } catch (err) {
          stop();
          return reject(err);
        }
        // Followed through the store while another process (or nobody yet) owns the run.
        if (!this.closed) this.polls.add((poll = setTimeout(check, this.leases?.pollMs ?? 100)));
      };
      void check();
    });
  }

  private hasQueued(runId: string): boolean {
    return this.queue.has(runId);
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

  private enqueue(runId: string, facts: Fact[], actor?: string, newRun?: Pending['newRun'], commandId?: number): Promise<ActivationSummary> {
    if (this.closed) return Promise.reject(new KernelError('host.closed', 'the host is closed'));
    return new Promise((resolve, reject) => {
      let pending = this.queue.get(runId);
      if (!pending) this.queue.set(runId, (pending = { groups: [] }));
      pending.groups.push({ facts, ...(actor ? { actor } : {}), ...(commandId !== undefined ? { commandId } : {}), resolve, reject });
      if (newRun) pending.newRun = newRun;
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.options.flushMode === 'manual' || this.flushScheduled || this.flushing) return;
    this.flushScheduled = true;
    setImmediate(() => {
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
        if (this.options.engine.dead) await this.options.engine.revive();
        const batch: [string, Pending][] = [];
        for (const entry of this.queue) {
          if (batch.length >= maxRuns - activated) break;
          batch.push(entry);
        }
        for (const [runId] of batch) this.queue.delete(runId);
        activated += batch.length;
        await this.runBatch(batch);
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
   * The lease a run's commit is staged under, taking it when this process does not hold it yet.
   * A run taken over from another owner (or whose journal changed since this process last held
   * it) is dropped from the engine and resumed as after a restart, with its authority resolved
   * again. Answers `null` when the run cannot be owned here (the groups were rejected).
   */
  private async leaseFor(runId: string, pending: Pending): Promise<CommitEntry['lease'] | null | undefined> {
    const leases = this.leases;
    if (!leases) return undefined;
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
      const resume = pending.groups.flatMap((g) => g.facts).find((f) => f.type === 'resume-requested');
      if (resume && resume.type === 'resume-requested') resume.afterRestart = true;
      else {
        const plan = await this.planOf(runId);
        const authority = this.options.authority({ runId, workflowId: plan.templates[plan.root].template.metadata.id });
        pending.groups[0].facts.unshift({ type: 'resume-requested', by: 'takeover', authority, afterRestart: true, effects: this.options.gateway.effects() });
      }
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

  private activateGroups(runId: string, pending: Pending, groups: FactGroup[]) {
    return this.options.engine.activate({
      runId,
      now: this.now(),
      facts: groups.flatMap((g) => g.facts),
      ...(groups[groups.length - 1].actor ? { actor: groups[groups.length - 1].actor } : {}),
      ...(pending.newRun ? { plan: pending.newRun.plan, templateKey: pending.newRun.templateKey } : {}),
    });
  }

  /** One activation; a cold run of a store without a synchronous load is loaded first. */
  private async activateLoading(runId: string, pending: Pending, groups: FactGroup[]) {
    try {
      // A new run has no journal to load: a store without a synchronous load is not asked (the
      // commit's sequence check still refuses a run id that exists).
      if (pending.newRun && !this.options.store.loadSync) this.tails.set(runId, undefined);
      try {
        return this.activateGroups(runId, pending, groups);
      } catch (err) {
        if (!(err instanceof EngineCallError && err.code === 'store.not-loaded')) throw err;
        this.tails.set(runId, await this.options.store.load(runId));
        return this.activateGroups(runId, pending, groups);
      }
    } finally {
      this.tails.delete(runId);
    }
  }

  private async runBatch(batch: [string, Pending][]): Promise<void> {
    type Result = { runId: string; groups: FactGroup[]; summary: ActivationSummary; requests: GatewayRequest[]; cancels: { invocationId: string; reason: string }[]; commits: CommitEntry[]; lease?: CommitEntry['lease']; rest?: boolean };
    const results: Result[] = [];
    const refused: { id: number; error: { code: string; message: string } }[] = [];
    const fail = (g: FactGroup, err: unknown) => {
      const failure = err instanceof EngineCallError ? new KernelError(err.code, err.message, err.detail) : err;
      if (g.commandId !== undefined) {
        const e = failure as { code?: string; message?: string };
        refused.push({ id: g.commandId, error: { code: e.code ?? 'command.refused', message: e.message ?? String(failure) } });
      }
      g.reject(failure);
    };
    for (let i = 0; i < batch.length; i++) {
      const [runId, pending] = batch[i];
      let lease: CommitEntry['lease'] | null | undefined;
      try {
        lease = await this.leaseFor(runId, pending);
      } catch (err) {
        for (const g of pending.groups) fail(g, err);
        continue;
      }
      if (lease === null) continue;
      // The facts of several deliveries are applied in one activation; when the engine refuses
      // that, each delivery is applied alone, so one bad command cannot take the others down.
      const attempts = pending.groups.length > 1 && !pending.newRun ? [pending.groups, ...pending.groups.map((g) => [g])] : [pending.groups];
      for (let a = 0; a < attempts.length; a++) {
        const groups = attempts[a];
        try {
          const out = await this.activateLoading(runId, pending, groups);
          results.push({ runId, groups, summary: out.summary, requests: out.requests, cancels: out.cancels, commits: out.commits, lease });
          if (a === 0) break;
        } catch (err) {
          if (err instanceof EngineTrapError) {
            this.options.log('error', `run ${runId}: ${err.message}`);
            for (const g of groups) fail(g, err);
            // The rest of the batch was not activated: it goes back to the queue, not lost.
            this.requeue(batch.slice(i + 1));
            i = batch.length;
            break;
          }
          if (a === 0 && attempts.length > 1) continue;
          for (const g of groups) fail(g, err);
        }
      }
    }
    const entries: CommitEntry[] = [];
    for (const r of results) {
      // Decided once, when the entry is staged: the lease bookkeeping after the commit follows it.
      const rest = (r.rest = this.comesToRest(r.runId, r.summary, r.requests));
      r.commits.forEach((c, n) => {
        const last = n === r.commits.length - 1;
        entries.push({
          ...c,
          ...(r.lease ? { lease: r.lease } : {}),
          ...(last ? { outcome: storedProjection(r.summary), ...(rest && r.lease ? { releaseLease: true } : {}) } : {}),
          ...(last ? { appliedCommands: r.groups.flatMap((g) => (g.commandId !== undefined ? [g.commandId] : [])) } : {}),
        });
      });
    }
    if (refused.length > 0 && this.leases) await this.leases.refuse(refused).catch((err) => this.options.log('warn', `recording refused commands failed: ${(err as Error).message}`));
    let rejected = new Map<string, string>();
    if (entries.length > 0) {
      try {
        rejected = new Map((await this.options.store.commit(entries)).map((r) => [r.runId, r.code]));
      } catch (err) {
        // Nothing was written: every run of the batch goes back to the journal's truth. The
        // facts of the batch (outcomes of calls among them) are lost, so this process no longer
        // knows how its in-flight work ended: a later resume must treat it as after a restart.
        for (const r of results) {
          this.safeEvict(r.runId);
          this.known.delete(r.runId);
          for (const g of r.groups) g.reject(err);
          for (const l of [...(this.lossListeners.get(r.runId) ?? [])]) l(err);
        }
        this.options.log('error', `commit of ${entries.length} activation(s) failed: ${(err as Error).message}`);
        return;
      }
    }
    for (const r of results) {
      const code = rejected.get(r.runId);
      if (code === 'store.fenced') {
        this.leases?.drop(r.runId);
        this.forget(r.runId, 'a commit was refused by the fencing check');
        const fenced = new KernelError('run.fenced', `run ${r.runId} is owned by another process now; this process's activation was discarded`);
        for (const g of r.groups) g.reject(fenced);
        continue;
      }
      if (code) {
        this.safeEvict(r.runId);
        const conflict = new KernelError('store.conflict', `run ${r.runId} was changed by another writer; its activation was discarded`);
        for (const g of r.groups) g.reject(conflict);
        continue;
      }
      if (r.lease && r.commits.length > 0) {
        if (r.rest) this.leases?.released(r.runId, r.lease.epoch);
        else this.leases?.committed(r.runId, r.lease.epoch);
      }
      this.known.add(r.runId);
      for (const c of r.cancels) this.cancelInvocation(c.invocationId, c.reason);
      for (const request of r.requests) this.dispatch(request);
      this.armWake(r.runId, r.summary);
      if (terminalStatuses.has(r.summary.status)) this.onTerminal(r.runId, r.summary);
      for (const g of r.groups) g.resolve(r.summary);
      for (const l of [...(this.listeners.get(r.runId) ?? [])]) l(r.summary);
    }
  }

  /**
   * A run comes to rest when it ended, or is paused with nothing in flight here but approvals and
   * no timer: its lease is given up with the commit, so that any process may act on it next.
   */
  private comesToRest(runId: string, summary: ActivationSummary, requests: readonly GatewayRequest[]): boolean {
    if (terminalStatuses.has(summary.status)) return true;
    return summary.status === 'paused' && summary.wakeAt === undefined && (this.busy.get(runId) ?? 0) === 0 && requests.every((r) => r.kind === 'approval');
  }

  private safeEvict(runId: string): void {
    try {
      this.options.engine.evict(runId);
    } catch {
      // A dead instance holds nothing to evict.
    }
  }

  private disarm(runId: string): void {
    const previous = this.timers.get(runId);
    if (previous) clearTimeout(previous);
    this.timers.delete(runId);
    this.wakeAts.delete(runId);
  }

  private armWake(runId: string, summary: ActivationSummary): void {
    this.disarm(runId);
    if (summary.wakeAt === undefined || terminalStatuses.has(summary.status)) return;
    this.wakeAts.set(runId, summary.wakeAt);
    if (this.options.timers === false || this.closed) return;
    const delay = Math.max(0, summary.wakeAt - this.now());
    this.timers.set(
      runId,
      setTimeout(() => {
        this.timers.delete(runId);
        this.wakeAts.delete(runId);
        this.deliver(runId, { type: 'resume-requested', by: 'timer', afterRestart: false }).catch((err) => this.options.log('warn', `wake of ${runId} failed: ${(err as Error).message}`));
      }, Math.min(delay, 2_147_000_000)),
    );
  }

  /** Runs whose wake-up time has come (for hosts that drive time themselves). */
  dueWakeups(limit: number): string[] {
    const now = this.now();
    const due: string[] = [];
    for (const [runId, at] of this.wakeAts) {
      if (at <= now) due.push(runId);
      if (due.length >= limit) break;
    }
    return due;
  }

  wake(runId: string): Promise<ActivationSummary> {
    this.wakeAts.delete(runId);
    return this.deliver(runId, { type: 'resume-requested', by: 'timer', afterRestart: false });
  }

  private onTerminal(runId: string, summary: ActivationSummary): void {
    this.plans.delete(runId);
    const link = this.children.get(runId);
    if (!link) return;
    this.children.delete(runId);
    const fact: Fact =
      summary.status === 'completed'
        ? { type: 'capability-completed', invocationId: runId, ok: true, output: summary.result ?? null }
        : {
            type: 'capability-completed',
            invocationId: runId,
            ok: false,
            error: { code: summary.status === 'cancelled' ? 'workflow.child-cancelled' : 'workflow.child-failed', message: `child run ${runId} ${summary.status}${summary.error ? `: ${summary.error.message}` : ''}`, retryable: false },
          };
    this.deliver(link.parentRunId, fact).catch((err) => this.options.log('warn', `delivering the result of child ${runId} to ${link.parentRunId} failed: ${(err as Error).message}`));
  }

  private cancelInvocation(invocationId: string, reason: string): void {
    const controller = this.controllers.get(invocationId);
    if (controller) {
      // The engine recorded the cancellation: the gateway's own "cancelled" answer adds nothing.
      this.cancelledByEngine.add(invocationId);
      controller.abort(new KernelError('capability.cancelled', reason));
      this.controllers.delete(invocationId);
    }
    if (this.children.has(invocationId)) {
      this.deliver(invocationId, { type: 'cancel-requested', reason, by: 'parent' }).catch(() => undefined);
    }
  }

  private dispatch(request: GatewayRequest): void {
    if (request.kind === 'workflow') {
      this.startChild(request);
      return;
    }
    const controller = new AbortController();
    this.controllers.set(request.invocationId, controller);
    const holdsOwner = request.kind !== 'approval';
    if (holdsOwner) this.busy.set(request.runId, (this.busy.get(request.runId) ?? 0) + 1);
    this.dispatching.set(request.runId, (this.dispatching.get(request.runId) ?? 0) + 1);
    const settle = async (outcome: CapabilityOutcome | undefined) => {
      this.controllers.delete(request.invocationId);
      try {
        await settleOutcome(request, outcome);
      } finally {
        // After the outcome is queued: a run is not settled while its outcome is on the way.
        const d = (this.dispatching.get(request.runId) ?? 1) - 1;
        if (d > 0) this.dispatching.set(request.runId, d);
        else this.dispatching.delete(request.runId);
      }
    };
    const settleOutcome = async (request: GatewayRequest, outcome: CapabilityOutcome | undefined) => {
      if (holdsOwner) {
        const n = (this.busy.get(request.runId) ?? 1) - 1;
        if (n > 0) this.busy.set(request.runId, n);
        else this.busy.delete(request.runId);
      }
      const cancelled = this.cancelledByEngine.delete(request.invocationId);
      // A host that is stopping hands its calls back: their outcomes are unknown to the next owner.
      if (outcome === undefined || this.closed || this.stopping) return;
      if (cancelled && !outcome.ok && outcome.error.code === 'capability.cancelled') return;
      await this.deliverOutcome(request, outcome);
    };
    let promise: Promise<CapabilityOutcome | undefined>;
    try {
      promise = this.options.gateway.execute(request, {
        signal: controller.signal,
        invocationId: request.invocationId,
        reissued: request.reissued === true,
        // What the call really did, when it ends after it was cancelled: evidence, never a wake-up.
        late: (outcome) => {
          const delivered = outcome.then((o) => (this.closed ? undefined : this.deliverOutcome(request, o)), () => undefined);
          this.lateWork.add(delivered);
          void delivered.finally(() => this.lateWork.delete(delivered));
        },
      });
    } catch (err) {
      promise = Promise.resolve(outcomeOfThrown(err, `${request.kind}.error`));
    }
    const tracked = promise.then(settle, (err) => settle(outcomeOfThrown(err, `${request.kind}.error`)));
    this.inflightDispatches.add(tracked);
    void tracked.finally(() => this.inflightDispatches.delete(tracked));
  }

  /**
   * Delivers a call's outcome to its run. When the run moved to another owner meanwhile, the
   * outcome goes to the run's inbox instead, and that owner records it as `capability.late`.
   */
  private async deliverOutcome(request: GatewayRequest, outcome: CapabilityOutcome): Promise<void> {
    let fact: Extract<Fact, { type: 'capability-completed' }>;
    try {
      fact = outcome.ok
        ? { type: 'capability-completed', invocationId: request.invocationId, ok: true, output: outcome.output, ...(await this.capture(request.runId, outcome.output)) }
        : { type: 'capability-completed', invocationId: request.invocationId, ok: false, error: outcome.error };
    } catch (err) {
      fact = { type: 'capability-completed', invocationId: request.invocationId, ok: false, error: { code: 'capability.output-not-json', message: `the result cannot be stored: ${(err as Error).message}`, retryable: false } };
    }
    this.deliver(request.runId, fact).catch((err) => {
      const code = (err as { code?: string }).code;
      if ((code === 'run.owned-elsewhere' || code === 'run.fenced') && this.leases) {
        this.leases
          .postLateOutcome(request.runId, { invocationId: fact.invocationId, ok: fact.ok, output: fact.output, error: fact.error })
          .catch((e) => this.options.log('warn', `recording the late outcome of ${request.invocationId} failed: ${(e as Error).message}`));
        return;
      }
      this.options.log('warn', `delivering ${request.invocationId} failed: ${(err as Error).message}`);
    });
  }

  /** Decides how a capability result is kept: inline, as an artifact, or redacted to its digest. */
  private async capture(runId: string, output: unknown): Promise<{ artifact?: { digest: string; size: number; mediaType: string; redacted: boolean } }> {
    const policy = this.options.capture ?? defaultCapture;
    const sha256 = this.options.sha256;
    const store = this.options.store;
    if (!sha256) return {};
    const mode = captureModeOf(await this.planOf(runId), policy);
    const text = JSON.stringify(output ?? null);
    if (mode !== 'metadata' && text.length <= policy.inlineBytesMax) return {};
    const bytes = new TextEncoder().encode(text);
    const mediaType = 'application/json';
    if (mode === 'metadata' || (mode === 'standard' && bytes.byteLength > policy.maxArtifactBytes) || !store.putArtifact) {
      return { artifact: { digest: sha256(bytes), size: bytes.byteLength, mediaType, redacted: true } };
    }
    const ref = await store.putArtifact(bytes, mediaType);
    return { artifact: { digest: ref.digest, size: ref.size, mediaType, redacted: false } };
  }

  private startChild(request: GatewayRequest): void {
    this.startChildAsync(request).catch((err) => this.options.log('warn', `starting child ${request.invocationId} failed: ${(err as Error).message}`));
  }

  private async startChildAsync(request: GatewayRequest): Promise<void> {
    const childRunId = request.invocationId;
    this.children.set(childRunId, { parentRunId: request.runId });
    const existing = await this.options.store.getRun(childRunId);
    if (existing) {
      if (terminalStatuses.has(existing.status)) {
        const outcome = await this.outcomeOf(existing);
        this.onTerminal(childRunId, { runId: childRunId, status: outcome.status as any, seq: outcome.seq, activation: 0, events: 0, result: outcome.output, error: outcome.error });
      } else if (!this.known.has(childRunId)) {
        const authority = this.options.authority({ runId: childRunId, workflowId: request.name });
        this.resume(childRunId, 'parent', authority).catch((err) => this.options.log('warn', `resuming child ${childRunId} failed: ${(err as Error).message}`));
      }
      return;
    }
    const plan = await this.planOf(request.runId);
    const authority = this.options.authority({ runId: childRunId, workflowId: request.name });
    this.launch({ runId: childRunId, plan, templateKey: request.name, input: request.input, authority, parentRunId: request.runId, actor: 'parent' }).catch((err) => {
      this.children.delete(childRunId);
      const e = err as { code?: string; message?: string };
      this.deliver(request.runId, { type: 'capability-completed', invocationId: childRunId, ok: false, error: { code: e.code ?? 'workflow.launch-failed', message: e.message ?? String(err), retryable: false } }).catch(() => undefined);
    });
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
    let n = 0;
    for (const v of this.busy.values()) n += v;
    return n;
  }

  /** Resolves when no call is in flight any more, or after `ms`; answers whether none is left. */
  async drain(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.callsInFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, Math.min(20, Math.max(1, deadline - Date.now()))));
    while (this.flushing || this.queue.size > 0) await new Promise((r) => setImmediate(r));
    return this.callsInFlight === 0;
  }

  private stopping = false;
  /** Invocations the engine cancelled whose gateway answer has not come back yet. */
  private readonly cancelledByEngine = new Set<string>();
  /** Outcomes of cancelled calls still on their way (evidence a closing host waits a moment for). */
  private readonly lateWork = new Set<Promise<unknown>>();
  /** Timers of `waitFor` calls that follow runs through the store. */
  private readonly polls = new Set<ReturnType<typeof setTimeout>>();

  /**
   * Stops timers and refuses new work. Calls still in flight are handed back: they are aborted,
   * their outcomes are not recorded here, and the leases are given up, so the next owner treats
   * them as unknown (reissued when safe, `needs_attention` otherwise).
   */
  async close(options: { abortInflight?: boolean } = {}): Promise<void> {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    for (const t of this.polls) clearTimeout(t);
    this.polls.clear();
    // Cancelled calls whose real outcome is about to arrive: recorded as evidence if it comes
    // within a moment (a tool that ignores its signal is not waited for).
    if (this.lateWork.size > 0) await Promise.race([Promise.all(this.lateWork), new Promise((r) => setTimeout(r, lateEvidenceWaitMs))]);
    while (this.flushing || this.queue.size > 0) {
      if (this.options.flushMode === 'manual' && !this.flushing) await this.flush();
      else await new Promise((r) => setImmediate(r));
    }
    this.stopping = true;
    if (options.abortInflight) for (const c of this.controllers.values()) c.abort(new KernelError('host.closed', 'the host is closing'));
    this.closed = true;
    await this.leases?.stop();
  }
}

/** The capture mode of a run: the deployment's, narrowed by any template of its plan. */
export function captureModeOf(plan: ExecutionPlan, policy: CapturePolicy): CapturePolicy['mode'] {
  let mode = policy.mode;
  for (const t of Object.values(plan.templates)) {
    const narrowed = t.template?.spec?.policies?.capture as CapturePolicy['mode'] | undefined;
    if (narrowed && captureOrder.indexOf(narrowed) < captureOrder.indexOf(mode)) mode = narrowed;
  }
  return mode;
}

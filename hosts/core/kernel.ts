// The scheduler every host shares. It turns facts into activations, commits the staged work of
// several activations in one store transaction (group commit), and only then carries out the
// gateway requests they staged. Outcomes come back as facts of later activations.
//
// Order per flush: activate every run with queued facts -> store.commit(all commits) -> for the
// commits that landed: dispatch requests and cancels, arm wake-ups, notify waiters.
import { EngineCallError, EngineTrapError, type EngineInstance } from './engine-instance.js';
import { outcomeOfThrown, type Gateway } from './gateway.js';
import type { CommitEntry, JournalStore } from './store.js';
import { terminalStatuses, type ActivationSummary, type Authority, type CapabilityOutcome, type ExecutionPlan, type Fact, type GatewayRequest, type HostLog } from './types.js';

export interface RunOutcome {
  runId: string;
  status: string;
  pausedReason?: string;
  output?: unknown;
  error?: { code: string; message: string; detail?: unknown };
  seq: number;
}

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
}

interface Pending {
  facts: Fact[];
  newRun?: { plan: ExecutionPlan; templateKey?: string };
  actor?: string;
  waiters: { resolve: (s: ActivationSummary) => void; reject: (e: unknown) => void }[];
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
  private readonly children = new Map<string, { parentRunId: string }>();
  private readonly plans = new Map<string, ExecutionPlan>();
  /** Runs this process has activated: their in-flight work is known to this process. */
  private readonly known = new Set<string>();
  private readonly inflightDispatches = new Set<Promise<unknown>>();
  private closed = false;
  readonly now: () => number;

  constructor(private readonly options: KernelOptions) {
    this.now = options.now ?? Date.now;
  }

  get store(): JournalStore {
    return this.options.store;
  }

  /** Starts a new run; resolves when `run.accepted` is durable. */
  launch(args: { runId: string; plan: ExecutionPlan; templateKey?: string; input: unknown; authority: Authority; parentRunId?: string; correlation?: unknown; timeoutMs?: number; actor?: string }): Promise<ActivationSummary> {
    const fact: Fact = {
      type: 'run-requested',
      input: args.input,
      authority: args.authority,
      ...(args.parentRunId ? { parentRunId: args.parentRunId } : {}),
      ...(args.correlation !== undefined ? { correlation: args.correlation } : {}),
      ...(args.timeoutMs !== undefined ? { timeoutMs: args.timeoutMs } : {}),
    };
    if (this.queue.has(args.runId)) return Promise.reject(new KernelError('run.exists', `run ${args.runId} is already being started`));
    this.plans.set(args.runId, args.plan);
    return this.enqueue(args.runId, fact, args.actor, { plan: args.plan, templateKey: args.templateKey });
  }

  /** Delivers a fact to a run; resolves with the summary of the activation that applied it. */
  deliver(runId: string, fact: Fact, actor?: string): Promise<ActivationSummary> {
    return this.enqueue(runId, fact, actor);
  }

  /** Resumes a run, telling the engine whether this process lost its in-flight work. */
  resume(runId: string, by: string, authority: Authority): Promise<ActivationSummary> {
    const afterRestart = !this.known.has(runId);
    return this.deliver(runId, { type: 'resume-requested', by, authority, afterRestart, effects: this.options.gateway.effects() }, by);
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

  /** Waits until a run is terminal (or, with `orPaused`, paused). */
  waitFor(runId: string, orPaused: boolean): Promise<RunOutcome> {
    const record = this.options.store.getRun(runId);
    return new Promise((resolve) => {
      const done = (s: { status: string; pausedReason?: string; result?: unknown; error?: any; seq: number }) =>
        terminalStatuses.has(s.status) || (orPaused && s.status === 'paused' && !this.hasQueued(runId));
      const finish = (s: ActivationSummary) => {
        stop();
        resolve({ runId, status: s.status, pausedReason: s.pausedReason, output: s.result, error: s.error, seq: s.seq });
      };
      const stop = this.watch(runId, (s) => {
        if (done(s)) finish(s);
      });
      if (record && done({ status: record.status, seq: record.lastSeq }) && !this.queue.has(runId)) {
        stop();
        resolve(this.outcomeFromStore(runId));
      }
    });
  }

  private hasQueued(runId: string): boolean {
    return this.queue.has(runId);
  }

  /** The outcome of a run as the journal tells it (terminal or paused). */
  outcomeFromStore(runId: string): RunOutcome {
    const record = this.options.store.getRun(runId);
    if (!record) throw new KernelError('run.not-found', `run ${runId} does not exist`);
    const page = this.options.store.readEvents(runId, Math.max(0, record.lastSeq - 8), 8);
    const out: RunOutcome = { runId, status: record.status, seq: record.lastSeq };
    for (const line of page.events) {
      const e = JSON.parse(line);
      if (e.type === 'run.completed') out.output = e.payload.output;
      if (e.type === 'run.failed') out.error = e.payload.error;
      if (e.type === 'run.paused') out.pausedReason = e.payload.reason;
    }
    return out;
  }

  private enqueue(runId: string, fact: Fact, actor?: string, newRun?: Pending['newRun']): Promise<ActivationSummary> {
    if (this.closed) return Promise.reject(new KernelError('host.closed', 'the host is closed'));
    return new Promise((resolve, reject) => {
      let pending = this.queue.get(runId);
      if (!pending) this.queue.set(runId, (pending = { facts: [], waiters: [] }));
      pending.facts.push(fact);
      if (newRun) pending.newRun = newRun;
      if (actor) pending.actor = actor;
      pending.waiters.push({ resolve, reject });
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
        this.runBatch(batch);
      }
    } finally {
      this.flushing = false;
    }
    return activated;
  }

  private runBatch(batch: [string, Pending][]): void {
    const results: { runId: string; pending: Pending; summary: ActivationSummary; requests: GatewayRequest[]; cancels: { invocationId: string; reason: string }[]; commits: CommitEntry[] }[] = [];
    for (const [runId, pending] of batch) {
      try {
        const out = this.options.engine.activate({
          runId,
          now: this.now(),
          facts: pending.facts,
          ...(pending.actor ? { actor: pending.actor } : {}),
          ...(pending.newRun ? { plan: pending.newRun.plan, templateKey: pending.newRun.templateKey } : {}),
        });
        results.push({ runId, pending, summary: out.summary, requests: out.requests, cancels: out.cancels, commits: out.commits });
      } catch (err) {
        if (err instanceof EngineTrapError) this.options.log('error', `run ${runId}: ${err.message}`);
        const failure = err instanceof EngineCallError ? new KernelError(err.code, err.message, err.detail) : err;
        for (const w of pending.waiters) w.reject(failure);
        if (err instanceof EngineTrapError) break;
      }
    }
    const commits = results.flatMap((r) => r.commits);
    let rejected = new Set<string>();
    if (commits.length > 0) {
      try {
        rejected = new Set(this.options.store.commit(commits).map((r) => r.runId));
      } catch (err) {
        // Nothing was written: every run of the batch goes back to the journal's truth. The
        // facts of the batch (outcomes of calls among them) are lost, so this process no longer
        // knows how its in-flight work ended: a later resume must treat it as after a restart.
        for (const r of results) {
          this.safeEvict(r.runId);
          this.known.delete(r.runId);
          for (const w of r.pending.waiters) w.reject(err);
        }
        this.options.log('error', `commit of ${commits.length} activation(s) failed: ${(err as Error).message}`);
        return;
      }
    }
    for (const r of results) {
      if (rejected.has(r.runId)) {
        this.safeEvict(r.runId);
        const conflict = new KernelError('store.conflict', `run ${r.runId} was changed by another writer; its activation was discarded`);
        for (const w of r.pending.waiters) w.reject(conflict);
        continue;
      }
      this.known.add(r.runId);
      for (const c of r.cancels) this.cancelInvocation(c.invocationId, c.reason);
      for (const request of r.requests) this.dispatch(request);
      this.armWake(r.runId, r.summary);
      if (terminalStatuses.has(r.summary.status)) this.onTerminal(r.runId, r.summary);
      for (const w of r.pending.waiters) w.resolve(r.summary);
      for (const l of [...(this.listeners.get(r.runId) ?? [])]) l(r.summary);
    }
  }

  private safeEvict(runId: string): void {
    try {
      this.options.engine.evict(runId);
    } catch {
      // A dead instance holds nothing to evict.
    }
  }

  private armWake(runId: string, summary: ActivationSummary): void {
    const previous = this.timers.get(runId);
    if (previous) clearTimeout(previous);
    this.timers.delete(runId);
    this.wakeAts.delete(runId);
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
    const settle = (outcome: CapabilityOutcome | undefined) => {
      this.controllers.delete(request.invocationId);
      if (outcome === undefined || this.closed) return;
      let fact: Fact;
      try {
        fact = outcome.ok
          ? { type: 'capability-completed', invocationId: request.invocationId, ok: true, output: outcome.output, ...this.capture(request.runId, outcome.output) }
          : { type: 'capability-completed', invocationId: request.invocationId, ok: false, error: outcome.error };
      } catch (err) {
        fact = { type: 'capability-completed', invocationId: request.invocationId, ok: false, error: { code: 'capability.output-not-json', message: `the result cannot be stored: ${(err as Error).message}`, retryable: false } };
      }
      this.deliver(request.runId, fact).catch((err) => this.options.log('warn', `delivering ${request.invocationId} failed: ${(err as Error).message}`));
    };
    let promise: Promise<CapabilityOutcome | undefined>;
    try {
      promise = this.options.gateway.execute(request, { signal: controller.signal, invocationId: request.invocationId, reissued: request.reissued === true });
    } catch (err) {
      promise = Promise.resolve(outcomeOfThrown(err, `${request.kind}.error`));
    }
    const tracked = promise.then(settle, (err) => settle(outcomeOfThrown(err, `${request.kind}.error`)));
    this.inflightDispatches.add(tracked);
    void tracked.finally(() => this.inflightDispatches.delete(tracked));
  }

  /** Decides how a capability result is kept: inline, as an artifact, or redacted to its digest. */
  private capture(runId: string, output: unknown): { artifact?: { digest: string; size: number; mediaType: string; redacted: boolean } } {
    const policy = this.options.capture ?? defaultCapture;
    const sha256 = this.options.sha256;
    const store = this.options.store;
    if (!sha256) return {};
    let mode = policy.mode;
    for (const t of Object.values(this.planOf(runId).templates)) {
      const narrowed = t.template?.spec?.policies?.capture as CapturePolicy['mode'] | undefined;
      if (narrowed && captureOrder.indexOf(narrowed) < captureOrder.indexOf(mode)) mode = narrowed;
    }
    const text = JSON.stringify(output ?? null);
    if (mode !== 'metadata' && text.length <= policy.inlineBytesMax) return {};
    const bytes = new TextEncoder().encode(text);
    const mediaType = 'application/json';
    if (mode === 'metadata' || (mode === 'standard' && bytes.byteLength > policy.maxArtifactBytes) || !store.putArtifact) {
      return { artifact: { digest: sha256(bytes), size: bytes.byteLength, mediaType, redacted: true } };
    }
    const ref = store.putArtifact(bytes, mediaType);
    return { artifact: { digest: ref.digest, size: ref.size, mediaType, redacted: false } };
  }

  private startChild(request: GatewayRequest): void {
    const childRunId = request.invocationId;
    this.children.set(childRunId, { parentRunId: request.runId });
    const existing = this.options.store.getRun(childRunId);
    if (existing) {
      if (terminalStatuses.has(existing.status)) {
        const outcome = this.outcomeFromStore(childRunId);
        this.onTerminal(childRunId, { runId: childRunId, status: outcome.status as any, seq: outcome.seq, activation: 0, events: 0, result: outcome.output, error: outcome.error });
      } else if (!this.known.has(childRunId)) {
        const authority = this.options.authority({ runId: childRunId, workflowId: request.name });
        this.resume(childRunId, 'parent', authority).catch((err) => this.options.log('warn', `resuming child ${childRunId} failed: ${(err as Error).message}`));
      }
      return;
    }
    const plan = this.planOf(request.runId);
    const authority = this.options.authority({ runId: childRunId, workflowId: request.name });
    this.launch({ runId: childRunId, plan, templateKey: request.name, input: request.input, authority, parentRunId: request.runId, actor: 'parent' }).catch((err) => {
      this.children.delete(childRunId);
      const e = err as { code?: string; message?: string };
      this.deliver(request.runId, { type: 'capability-completed', invocationId: childRunId, ok: false, error: { code: e.code ?? 'workflow.launch-failed', message: e.message ?? String(err), retryable: false } }).catch(() => undefined);
    });
  }

  private planOf(runId: string): ExecutionPlan {
    let plan = this.plans.get(runId);
    if (!plan) {
      const tail = this.options.store.load(runId);
      if (!tail) throw new KernelError('run.not-found', `run ${runId} does not exist`);
      plan = JSON.parse(new TextDecoder().decode(tail.plan)) as ExecutionPlan;
      this.plans.set(runId, plan);
    }
    return plan;
  }

  /** Stops timers and refuses new work; waits for gateway calls in flight to settle or abort. */
  async close(options: { abortInflight?: boolean } = {}): Promise<void> {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    if (options.abortInflight) for (const c of this.controllers.values()) c.abort(new KernelError('host.closed', 'the host is closing'));
    while (this.flushing || this.queue.size > 0) {
      if (this.options.flushMode === 'manual' && !this.flushing) await this.flush();
      else await new Promise((r) => setImmediate(r));
    }
    this.closed = true;
  }
}

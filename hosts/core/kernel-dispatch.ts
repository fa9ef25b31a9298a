// Dispatch: the gateway requests and cancellations of committed activations. A request is carried
// out only after the commit that recorded it is durable (the scheduler calls `dispatch` then);
// its outcome comes back as a fact of a later activation. The one exception is a read-only or
// idempotent tool or agent call (`dispatchEarly`): running it again is harmless by its effect
// class, so it may start while its commit is on its way; its outcome waits for that commit, and
// a commit that does not land aborts it and drops its outcome. A call the engine cancelled whose work
// still ends is recorded as evidence (`capability.late`), never as a wake-up; a run that moved to
// another owner meanwhile gets the outcome through its inbox.
import type { ChildRuns } from './kernel-children.js';
import { KernelError } from './kernel-errors.js';
import { outcomeOfThrown, type Gateway } from './gateway.js';
import type { LeaseKeeper } from './leases.js';
import type { JournalStore } from './store.js';
import type { ActivationSummary, CapabilityOutcome, ExecutionPlan, Fact, GatewayRequest, HostLog } from './types.js';

/** What a call's end tells its run: its outcome, or that this host could not carry it out. */
type CompletedFact = Extract<Fact, { type: 'capability-completed' | 'capability-unavailable' }>;

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

/** The capture mode of a run: the deployment's, narrowed by any template of its plan. */
export function captureModeOf(plan: ExecutionPlan, policy: CapturePolicy): CapturePolicy['mode'] {
  let mode = policy.mode;
  for (const t of Object.values(plan.templates)) {
    const narrowed = t.template?.spec?.policies?.capture as CapturePolicy['mode'] | undefined;
    if (narrowed && captureOrder.indexOf(narrowed) < captureOrder.indexOf(mode)) mode = narrowed;
  }
  return mode;
}

/** What the kernel lends dispatch. */
export interface DispatchHost {
  gateway: Gateway;
  store: JournalStore;
  log: HostLog;
  capture: CapturePolicy;
  sha256?: (bytes: Uint8Array) => string;
  leases?: LeaseKeeper;
  children: ChildRuns;
  planOf(runId: string): Promise<ExecutionPlan>;
  deliver(runId: string, fact: Fact): Promise<ActivationSummary>;
  /** True once the host is closed: outcomes are no longer recorded here. */
  closed(): boolean;
  /** True while the host hands its calls back: their outcomes are unknown to the next owner. */
  stopping(): boolean;
  /** Whether read-only and idempotent calls may start before their commit lands (`KernelOptions.dispatchBeforeCommit`). */
  dispatchBeforeCommit: boolean;
}

/** The kinds of call `dispatchEarly` may start: an approval or a child workflow is never started early. */
// A model turn is read-only: it may start before its commit lands like a read-only tool.
const earlyKinds: ReadonlySet<GatewayRequest['kind']> = new Set(['tool', 'agent', 'model']);

export class Dispatcher {
  private readonly controllers = new Map<string, AbortController>();
  /** Calls in flight per run that need this process to stay the owner (approvals do not). */
  private readonly busy = new Map<string, number>();
  /** Every dispatch in flight per run, approvals included: a run is settled only once none is left. */
  private readonly dispatching = new Map<string, number>();
  private readonly inflight = new Set<Promise<unknown>>();
  /** Invocations the engine cancelled whose gateway answer has not come back yet. */
  private readonly cancelledByEngine = new Set<string>();
  /** Outcomes of cancelled calls still on their way (evidence a closing host waits a moment for). */
  private readonly lateWork = new Set<Promise<unknown>>();
  /** Calls started before their commit landed, by invocation id: `landed` opens (or shuts) their gate. */
  private readonly early = new Map<string, (landed: boolean) => void>();
  /** Early calls that ended while their commit is still on its way: their outcomes as facts (`readyFacts`). */
  private readonly ready = new Map<string, CompletedFact>();
  /** Early calls aborted because the commit of their request did not land. */
  private readonly uncommitted = new WeakSet<AbortController>();
  /** Early calls whose outcomes the scheduler folded into their own commit (`take`): not delivered again. */
  private readonly taken = new Set<string>();

  constructor(private readonly host: DispatchHost) {}

  /** Calls of a run in flight here that need this process to stay its owner. */
  busyFor(runId: string): number {
    return this.busy.get(runId) ?? 0;
  }

  /** Whether any call of the run (approvals included) is still on its way here. */
  dispatchingFor(runId: string): boolean {
    return this.dispatching.has(runId);
  }

  /** Calls this process is carrying out now (not approvals waiting for a person). */
  get callsInFlight(): number {
    let n = 0;
    for (const v of this.busy.values()) n += v;
    return n;
  }

  /** Waits up to `ms` for the real outcomes of cancelled calls (a tool that ignores its signal is not waited for). */
  async settleLate(ms: number): Promise<void> {
    if (this.lateWork.size > 0) await Promise.race([Promise.all(this.lateWork), new Promise((r) => setTimeout(r, ms))]);
  }

  /** Aborts every call in flight (a host that closes without waiting for them). */
  abortAll(): void {
    for (const c of this.controllers.values()) c.abort(new KernelError('host.closed', 'the host is closing'));
  }

  /**
   * A call the host carries out itself, outside `dispatch` (an attempt recovery runs again): the
   * engine's cancellation of it aborts the returned signal, the one abort path for every call.
   * `release` once the call has ended.
   */
  adopt(invocationId: string): { signal: AbortSignal; release(): void } {
    const controller = new AbortController();
    this.controllers.set(invocationId, controller);
    return {
      signal: controller.signal,
      release: () => {
        if (this.controllers.get(invocationId) === controller) this.controllers.delete(invocationId);
        this.cancelledByEngine.delete(invocationId);
      },
    };
  }

  /** The engine cancelled an invocation: abort it here, or cancel the child run it is. */
  cancel(invocationId: string, reason: string): void {
    const controller = this.controllers.get(invocationId);
    if (controller) {
      // The engine recorded the cancellation: the gateway's own "cancelled" answer adds nothing.
      this.cancelledByEngine.add(invocationId);
      controller.abort(new KernelError('capability.cancelled', reason));
      this.controllers.delete(invocationId);
    }
    this.host.children.cancel(invocationId, reason);
  }

  /**
   * Starts a call while the commit that records its request is still on its way, when that is
   * safe: a tool or agent call that is read-only or idempotent by the template or by the gateway
   * (running it again, as after a crash, is harmless) — with `readOnlyOnly` (beside a run's first
   * commit), a read-only one only, of a run whose lease is known valid for a third of its lifetime more
   * without renewing. Its outcome is held until `landed` says whether the commit landed; when it
   * did not, the call is aborted and its outcome dropped (the run's next activation decides again
   * from the journal). Answers whether the call started; one that did not is dispatched as usual
   * once its commit has landed.
   */
  dispatchEarly(request: GatewayRequest, readOnlyOnly = false): boolean {
    if (!this.host.dispatchBeforeCommit || !earlyKinds.has(request.kind) || this.host.closed() || this.host.stopping()) return false;
    // Safe by the template's declaration (journaled in the request) or by the gateway's, as for
    // the calls a takeover reissues. Beside a run's first commit, only a call that changes nothing.
    if (request.effect !== 'read-only') {
      const declared = this.host.gateway.effects()[`${request.kind}:${request.name}`] ?? 'unknown';
      if (readOnlyOnly ? declared !== 'read-only' : request.effect === 'unknown' && declared === 'unknown') return false;
    }
    const leases = this.host.leases;
    if (leases && !leases.knownValid(request.runId)) return false;
    let open!: (landed: boolean) => void;
    const gate = new Promise<boolean>((resolve) => (open = resolve));
    this.early.set(request.invocationId, open);
    this.start(request, gate);
    return true;
  }

  /**
   * The outcomes of these early calls as facts, when every one of them has ended while the
   * commit that records their requests is still on its way; else undefined. Nothing changes
   * until `take`.
   */
  readyFacts(invocationIds: readonly string[]): CompletedFact[] | undefined {
    const facts: CompletedFact[] = [];
    for (const id of invocationIds) {
      const fact = this.ready.get(id);
      if (!fact || !this.early.has(id)) return undefined;
      facts.push(fact);
    }
    return facts;
  }

  /**
   * The scheduler folded these early calls' outcomes (`readyFacts`) into an activation whose
   * commit goes with the one that records their requests: they are not delivered again, and
   * whether that commit lands is the business of the run's books, not of these calls any more.
   */
  take(invocationIds: readonly string[]): void {
    for (const id of invocationIds) {
      const open = this.early.get(id);
      if (!open) continue;
      this.early.delete(id);
      this.ready.delete(id);
      this.taken.add(id);
      open(true);
    }
  }

  /** The commit that records these early calls' requests landed, or did not (see `dispatchEarly`). */
  landed(invocationIds: readonly string[], landed: boolean): void {
    for (const id of invocationIds) {
      const open = this.early.get(id);
      if (!open) continue;
      this.early.delete(id);
      open(landed);
    }
  }

  dispatch(request: GatewayRequest): void {
    if (request.kind === 'workflow') {
      this.host.children.start(request);
      return;
    }
    // Started before its commit: the commit has landed, so its outcome may go to the run now.
    if (this.early.has(request.invocationId)) this.landed([request.invocationId], true);
    else this.start(request);
  }

  /** Starts a call; with a `gate`, its outcome waits for the commit of its request (`dispatchEarly`). */
  private start(request: GatewayRequest, gate?: Promise<boolean>): void {
    const controller = new AbortController();
    this.controllers.set(request.invocationId, controller);
    const holdsOwner = request.kind !== 'approval';
    if (holdsOwner) count(this.busy, request.runId, 1);
    count(this.dispatching, request.runId, 1);
    // A commit that did not land: the call was never recorded, so it is aborted and its outcome is
    // not the run's (its next activation, from the journal, decides again and may reissue it).
    const committed = gate?.then((landed) => {
      if (!landed) {
        this.uncommitted.add(controller);
        controller.abort(new KernelError('capability.cancelled', `the commit that records ${request.invocationId} did not land`));
      }
      return landed;
    });
    const settle = async (outcome: CapabilityOutcome | undefined) => {
      let fact: CompletedFact | undefined;
      if (committed) {
        // An early call that ended before its commit landed: its fact is ready for the
        // scheduler to fold into that commit (`readyFacts`, `take`), or to deliver once it lands.
        if (outcome !== undefined && this.early.has(request.invocationId)) {
          fact = await this.factOf(request, outcome);
          if (this.early.has(request.invocationId)) this.ready.set(request.invocationId, fact);
        }
        if (!(await committed)) outcome = undefined;
        this.ready.delete(request.invocationId);
      }
      if (this.controllers.get(request.invocationId) === controller) this.controllers.delete(request.invocationId);
      try {
        if (holdsOwner) count(this.busy, request.runId, -1);
        const cancelled = this.cancelledByEngine.delete(request.invocationId);
        // Folded into the commit of its request: the run has it already.
        if (this.taken.delete(request.invocationId)) return;
        // A host that is stopping hands its calls back: their outcomes are unknown to the next owner.
        if (outcome === undefined || this.host.closed() || this.host.stopping()) return;
        if (cancelled && !outcome.ok && outcome.error.code === 'capability.cancelled') return;
        this.send(request, fact ?? (await this.factOf(request, outcome)));
      } finally {
        // After the outcome is queued: a run is not settled while its outcome is on the way.
        count(this.dispatching, request.runId, -1);
      }
    };
    // A call that needs this process to own the run starts only while its lease is known valid:
    // a process that stalled past its heartbeats (its lease expired, maybe taken over and the call
    // abandoned by the new owner) renews first, and starts nothing once the run is another's. It is
    // asked here and again by the gateway right before the tool runs (`mayStart`): what the gateway
    // awaits first (credentials, the run's trace ids from the store) is time in which the lease can
    // run out. An early call was checked by `dispatchEarly` against the lease its commit is staged under.
    // The call belongs to the lease epoch its request was committed under: a process that took
    // the run over again itself (its own lease had expired) abandoned the call in that takeover,
    // so a new epoch does not let it start.
    const leases = this.host.leases;
    const epoch = !gate && holdsOwner && leases ? leases.held(request.runId)?.epoch : undefined;
    const owned = epoch !== undefined;
    const sameEpoch = () => leases?.held(request.runId)?.epoch === epoch;
    const notStarted = () => this.host.log('warn', `run ${request.runId}: ${request.invocationId} was not started: this process no longer owns the run under the lease the call was requested with (it expired before the call could start)`);
    const mayStart = owned
      ? () => {
          const valid = sameEpoch() ? leases!.ensureValid(request.runId) : false;
          if (valid === false) {
            notStarted();
            return false;
          }
          if (valid === true) return true;
          return valid.then((ok) => {
            if (ok && sameEpoch()) return true;
            notStarted();
            return false;
          });
        }
      : undefined;
    const valid = mayStart ? mayStart() : true;
    if (valid === true) {
      this.execute(request, controller, settle, mayStart);
      return;
    }
    const waiting = Promise.resolve(valid).then((ok) => (ok && !controller.signal.aborted ? this.execute(request, controller, settle, mayStart) : settle(undefined)));
    this.inflight.add(waiting);
    void waiting.finally(() => this.inflight.delete(waiting));
  }

  private execute(request: GatewayRequest, controller: AbortController, settle: (outcome: CapabilityOutcome | undefined) => Promise<void>, mayStart?: () => boolean | Promise<boolean>): Promise<void> {
    let promise: Promise<CapabilityOutcome | undefined>;
    try {
      promise = this.host.gateway.execute(request, {
        ...(mayStart ? { mayStart } : {}),
        signal: controller.signal,
        invocationId: request.invocationId,
        reissued: request.reissued === true,
        // What the call really did, when it ends after it was cancelled: evidence, never a wake-up.
        late: (outcome) => {
          // A call aborted because the commit of its request did not land is not the run's: no
          // journal asked for it, so what it did is no evidence of anything there.
          if (this.uncommitted.has(controller)) return;
          const delivered = outcome.then(async (o) => (this.host.closed() ? undefined : this.send(request, await this.factOf(request, o))), () => undefined);
          this.lateWork.add(delivered);
          void delivered.finally(() => this.lateWork.delete(delivered));
        },
      });
    } catch (err) {
      promise = Promise.resolve(outcomeOfThrown(err, `${request.kind}.error`));
    }
    const tracked = promise.then(settle, (err) => settle(outcomeOfThrown(err, `${request.kind}.error`)));
    this.inflight.add(tracked);
    void tracked.finally(() => this.inflight.delete(tracked));
    return tracked;
  }

  /** A call's outcome as the fact its run is told: its output captured as the deployment keeps payloads. */
  private async factOf(request: GatewayRequest, outcome: CapabilityOutcome): Promise<CompletedFact> {
    if (!outcome.ok && outcome.unavailable === true) return { type: 'capability-unavailable', invocationId: request.invocationId, reason: outcome.error.message };
    try {
      return outcome.ok
        ? { type: 'capability-completed', invocationId: request.invocationId, ok: true, output: outcome.output, ...(await this.capture(request.runId, outcome.output)) }
        : { type: 'capability-completed', invocationId: request.invocationId, ok: false, error: outcome.error };
    } catch (err) {
      return { type: 'capability-completed', invocationId: request.invocationId, ok: false, error: { code: 'capability.output-not-json', message: `the result cannot be stored: ${(err as Error).message}`, retryable: false } };
    }
  }

  /**
   * Delivers a call's outcome to its run. When the run moved to another owner meanwhile, the
   * outcome goes to the run's inbox instead, and that owner records it as `capability.late`.
   */
  private send(request: GatewayRequest, fact: CompletedFact): void {
    const leases = this.host.leases;
    this.host.deliver(request.runId, fact).catch((err) => {
      // A call this host did not carry out has no outcome for anyone: the run's owner decides
      // from its own journal what to do with it.
      if (fact.type === 'capability-unavailable') {
        this.host.log('warn', `telling run ${request.runId} that ${request.invocationId} was not carried out failed: ${(err as Error).message}`);
        return;
      }
      // The call ran; whichever way the commit that was to hold its outcome lost (fenced, taken
      // over, a seq conflict, an I/O failure, a closing process), the outcome goes to the run's
      // inbox, so its owner — this process after a reload, or another — journals it: completing
      // the call when it is still in flight, as `capability.late` evidence otherwise. A commit
      // that did land after all (an acknowledgement lost on the way back) makes the inbox copy
      // a second record of the same outcome, never a second effect.
      if (leases) {
        leases
          .postLateOutcome(request.runId, { invocationId: fact.invocationId, ok: fact.ok, output: fact.output, error: fact.error })
          .catch((e) => this.host.log('error', `the outcome of ${request.invocationId} reached neither the journal (${(err as Error).message}) nor the run's inbox: ${(e as Error).message}`));
        return;
      }
      this.host.log('warn', `delivering ${request.invocationId} failed: ${(err as Error).message}`);
    });
  }

  /** Decides how a capability result is kept: inline, as an artifact, or redacted to its digest. */
  private async capture(runId: string, output: unknown): Promise<{ artifact?: { digest: string; size: number; mediaType: string; redacted: boolean } }> {
    const { capture: policy, sha256, store } = this.host;
    if (!sha256) return {};
    const mode = captureModeOf(await this.host.planOf(runId), policy);
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
}

/** Adds `by` to a per-run counter, dropping it at zero. */
function count(counter: Map<string, number>, runId: string, by: number): void {
  const n = (counter.get(runId) ?? 0) + by;
  if (n > 0) counter.set(runId, n);
  else counter.delete(runId);
}

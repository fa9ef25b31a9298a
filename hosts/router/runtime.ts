/**
 * The router host: the engine component, the file journal, local tools, and ONE cadence timer.
 *
 * Every cycle runs the same phases in a fixed order, each bounded by the profile's budget and
 * isolated (a phase that throws is logged, counted and simply runs again next cycle):
 *
 *   1. cancellation convergence   cancelled invocations: drop queued ones, stop running processes
 *   2. ordinary schedule          due wake-ups (retry backoff, deadlines) become facts
 *   3. workflow frontier          queued facts are activated, one group commit per round
 *   4. admission                  queued requests become attempts (receipts consulted)
 *   5. bounded dispatch           admitted attempts start
 *   then housekeeping             compaction when due, retirement of settled receipts
 *
 * There is no per-run timer, watcher or background scan: the next cycle is armed when one ends.
 *
 * Call order: `open` (recovers what a previous process left) -> `launch`/`cancel`/`getRun` ...
 * -> `stop` (freeze admission, drain execution, settle, close storage).
 */
import { ExternalMemoryCollector } from './external-memory.js';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { EngineInstance } from '../core/engine-instance.js';
import type { RunExport } from '../core/export-format.js';
import { approvalTarget, asHostError, authorityResolver, exportFromSyncStore, HostError, launchIdentity, launchTargetOf, mapErrors, planOfTail, readAllEvents, replayRequestOf, replaySourceFromSyncStore, runNotFound, runView, templateKeyOf, validateTemplate, workflowIdOf, type AuthorityResolver, type LaunchTarget as HostLaunchTarget, type RunView } from '../core/host-runtime.js';
import { assertRunInput } from '../core/json-input.js';
import { defaultCapture, Kernel, type CapturePolicy, type RunOutcome } from '../core/kernel.js';
import { outcomeOfRecord } from '../core/projection.js';
import { assertCaptureOptions } from '../core/capture-options.js';
import { approvalFact, resolutionFields } from '../core/operator.js';
import { terminalStatuses, type ActivationSummary, type Authority, type ExecutionPlan, type Fact, type HostLog } from '../core/types.js';
import { recoverAttempts, type AttemptRecovery } from './attempt-recovery.js';
import { compileComponentAhead, routerComponentLoader } from './component.js';
import { sha256Digest, sha256Hex } from '../shared/digest.js';
import { outcomeOfCompletion, RouterGateway, type ApprovalHandler, type CredentialResolver, type InProcessAgent, type InProcessTool } from './gateway.js';
import type { ModelDefinition, SkillResolver } from '../core/gateway-registry.js';
import { FileJournalStore, LatencyRing, type LatencySummary } from './journal.js';
import { journalFileKind } from './file-journal.js';
import { idleCadenceMsMax, retireAfterSettled, retireEveryCycles, toolStopGraceMs } from './limits.js';
import { LocalToolLauncher, type LocalToolSpec, type LocalToolTable } from './local-tools.js';
import { stderrLog } from './log.js';
import { profileNamed, scriptsOverBudget, withinBudget, type RouterProfile } from './profiles.js';
import { ReceiptLog } from './receipt-log.js';
import type { StorageLoss } from './record-file.js';
import { attemptEvidence, claimsAheadOfJournal, inflightCalls, planRunRecovery, requestOf, stopOrphan } from './recovery.js';
import { StoreError } from '../core/store.js';
import { createScriptImports } from './sandbox.js';
import { CrashLedger, parkAfterCrashes, type CrashRecord } from './crash-ledger.js';

export type { AuthorityResolver };

/** A tool of the host module: a fixed local command, or a JavaScript function run in process. */
export type RouterTool = LocalToolSpec | InProcessTool | InProcessTool['execute'];

export interface RouterHostOptions {
  /** State directory: journal.log, receipts.log, artifacts/, LOCK. */
  dir: string;
  profile?: 'edge' | 'standalone';
  tools?: Record<string, RouterTool>;
  agents?: Record<string, InProcessAgent | InProcessAgent['run']>;
  /** The models behind agent loops' `model` references (turns run in process). */
  models?: Record<string, ModelDefinition>;
  skills?: SkillResolver;
  approvals?: ApprovalHandler;
  /** Resolves the `credentialRef` / `connectionRef` of in-process tools and agents at call time (as in the Node host). */
  credentials?: CredentialResolver;
  authorities?: AuthorityResolver | Authority;
  /** What is kept of capability payloads (default: replayable, 16 KiB inline, 16 MiB per artifact), in `artifacts/`. */
  capture?: Partial<CapturePolicy>;
  log?: HostLog;
  /** Period of the cadence timer; the profile's default when absent. */
  cadenceMs?: number;
  /** Grace between SIGTERM and SIGKILL when a local process is stopped. */
  stopGraceMs?: number;
  /**
   * Open a journal or receipt log that lost acknowledged records (truncated, damaged before its
   * end, missing) by cutting it back to what is intact, instead of refusing with
   * `store.truncated` / `store.corrupt`. The loss is logged.
   */
  acceptLoss?: boolean;
}

/** The router has no catalog: it launches templates and pinned plans. */
export type LaunchTarget = Extract<HostLaunchTarget, { type: 'inline' | 'plan' }>;

export interface RouterRunHandle {
  runId: string;
  /** Resolves when the run is completed, failed or cancelled. */
  result: Promise<RunOutcome>;
  /** Resolves when the run is terminal or paused. */
  settled(): Promise<RunOutcome>;
}

export interface RecoveryReport {
  runs: number;
  settledFromReceipts: number;
  rerun: number;
  unknown: number;
  orphansStopped: number;
  receiptsRetired: number;
  /** Runs left parked (they killed `parkAfterCrashes` processes in a row): not activated. */
  parked: number;
}

/** One line of `router list`. */
export interface RunSummary {
  runId: string;
  status: string;
  pausedReason?: string;
  lastSeq: number;
  createdAt: number;
  updatedAt: number;
  /** Nodes (or foreach items) whose outcome is unknown: `router resolve` them. */
  attention?: { nodeId: string; item?: number }[];
  /** Approvals waiting for a person: `router approve` them. */
  approvals?: { nodeId: string; item?: number }[];
  error?: { code: string; message: string };
  /** Parked: it killed this many router processes in a row and is not activated (cancel or unpark it). */
  parked?: CrashRecord;
}

export interface RouterStats {
  profile: RouterProfile['name'];
  cycles: number;
  /** Milliseconds from process start (performance.timeOrigin) to the end of the first cycle. */
  firstCycleMs: number | undefined;
  phaseFailures: Record<string, number>;
  commitLatency: LatencySummary;
  compactions: number;
  receiptsRetired: number;
  recovery: RecoveryReport;
  inFlight: number;
  /** Runs parked now (see `RunSummary.parked`). */
  parked: number;
  /** Cycles that found nothing to do; an idle router backs off to one cycle per `idleCadenceMsMax`. */
  idleCycles: number;
  /** Delay before the next cycle now. */
  nextCycleDelayMs: number;
  /** Full collections the router asked for (external-memory.ts; 0 without `--expose-gc`). */
  memoryCollections: number;
}

export class RouterError extends HostError {
  constructor(code: string, message: string, detail?: unknown) {
    super(code, message, detail);
    this.name = 'RouterError';
  }
}

const phases = ['cancellation', 'schedule', 'frontier', 'admission', 'dispatch', 'housekeeping'] as const;

function isLocalSpec(tool: RouterTool): tool is LocalToolSpec {
  return typeof tool === 'object' && tool !== null && typeof (tool as LocalToolSpec).executable === 'string';
}

/**
 * A receipt whose claim names a run or seq the journal no longer holds: the journal lost what it
 * had acknowledged before that attempt started, so recovery would act on a past it cannot see
 * (and could run a started tool again). Refused unless the loss is accepted.
 */
function assertReceiptsBehindJournal(store: FileJournalStore, receipts: ReceiptLog, acceptLoss: boolean, log: HostLog): void {
  const ahead = claimsAheadOfJournal(receipts.all().map((a) => a.claim), (runId) => store.lastSeqOf(runId));
  if (ahead.length === 0) return;
  const first = ahead[0]!;
  const message = `receipts.log holds ${ahead.length} attempt(s) claimed after journal records that are gone (e.g. ${first.invocationId} of run ${first.runId} at seq ${first.journalSeq}; the journal has ${first.lastSeq === undefined ? 'no such run' : `seq ${first.lastSeq}`}; journal.log is ${store.fileBytes} bytes)`;
  if (!acceptLoss) throw new StoreError('store.truncated', `${message}; refusing to open (accept the loss explicitly to go on)`);
  log('error', `accepted loss (store.truncated): ${message}`);
}

/** A torn tail is normal after a crash; a loss was accepted by the operator: both are said once. */
function logStorageDamage(log: HostLog, file: string, droppedTailBytes: number, loss: StorageLoss | undefined): void {
  if (droppedTailBytes > 0) log('warn', `${file}: dropped a torn last record of ${droppedTailBytes} bytes (a write that never completed)`);
  if (loss) log('error', `${file}: accepted loss (${loss.code}): ${loss.message}; ${loss.droppedBytes} bytes cut, ${loss.intactBytes} bytes kept`);
}

function asError(err: unknown): RouterError {
  return asHostError(err, RouterError);
}

export class RouterHost {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private cycleRunning: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private cycles = 0;
  /** Cycles that found nothing to do (see `arm`). */
  private idleCycles = 0;
  /** Delay before the next cycle: `cadenceMs`, doubled by every idle cycle up to `idleCadenceMsMax`. */
  private delayMs: number;
  private timerDueAt = 0;
  /** Work arrived since the current cycle started. */
  private nudged = false;
  private firstCycleMs: number | undefined;
  private readonly phaseFailures: Record<string, number> = Object.fromEntries(phases.map((p) => [p, 0]));
  private compactions = 0;
  private receiptsRetired = 0;
  private lastRetireCycle = 0;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly cycleWaiters: (() => void)[] = [];
  /** Runs started or recovered by this host that may still change. */
  private readonly active = new Set<string>();

  private constructor(
    readonly profile: RouterProfile,
    readonly kernel: Kernel,
    readonly engine: EngineInstance,
    readonly store: FileJournalStore,
    private readonly commitLatency: LatencyRing,
    private readonly receipts: ReceiptLog,
    private readonly gateway: RouterGateway,
    private readonly localTools: LocalToolTable,
    private readonly resolveAuthority: AuthorityResolver,
    private readonly log: HostLog,
    private readonly cadenceMs: number,
    private readonly stopGraceMs: number,
    private readonly disposeScripts: () => void,
    readonly recovery: RecoveryReport,
    private readonly crashes: CrashLedger,
    private readonly externalMemory: ExternalMemoryCollector,
  ) {
    this.delayMs = cadenceMs;
  }

  /** Opens the state directory, recovers what a previous process left, and starts the cadence. */
  static async open(options: RouterHostOptions): Promise<RouterHost> {
    const profile = profileNamed(options.profile ?? 'edge');
    const dir = path.resolve(options.dir);
    const log = options.log ?? stderrLog();
    const localTools: Record<string, LocalToolSpec> = {};
    const tools: Record<string, InProcessTool | InProcessTool['execute']> = {};
    for (const [name, tool] of Object.entries(options.tools ?? {})) {
      if (isLocalSpec(tool)) localTools[name] = tool;
      else tools[name] = tool;
    }
    mapErrors(RouterError, () => assertCaptureOptions(options.capture));
    // V8 compiles the engine on background threads while this one reads the journal and loads QuickJS.
    compileComponentAhead();
    const commitLatency = new LatencyRing();
    const acceptLoss = options.acceptLoss ?? false;
    // Checked after every group commit: a foreach of scripts commits thousands of times within
    // one cadence cycle, and the buffers of each commit are garbage once it returns.
    const externalMemory = new ExternalMemoryCollector(profile.collectAfterExternalBytes);
    const store = FileJournalStore.open(dir, {
      observeCommit: (ms) => {
        commitLatency.add(ms);
        externalMemory.check();
      },
      acceptLoss,
    });
    const closers: (() => void)[] = [() => store.close()];
    try {
      const receipts = ReceiptLog.open(dir, Date.now, { acceptLoss });
      closers.push(() => receipts.close());
      logStorageDamage(log, 'journal.log', store.openReport.droppedTailBytes, store.openReport.loss);
      logStorageDamage(log, 'receipts.log', receipts.droppedTailBytes, receipts.loss);
      // Facts may be queued before the host exists (recovery); it is told once it does.
      let host: RouterHost | undefined;
      const crashes = CrashLedger.open(dir);
      closers.push(() => crashes.close());
      if (crashes.found) {
        const { runId, record } = crashes.found;
        log('error', record.parkedAt !== undefined
          ? `run ${runId} was being activated when ${record.crashes} processes in a row died; it is parked: it is not activated again until an operator cancels it or unparks it (agent-workflow router unpark)`
          : `run ${runId} was being activated when the previous process died (${record.crashes} of ${parkAfterCrashes} before it is parked)`);
      }
      const stopGraceMs = options.stopGraceMs ?? toolStopGraceMs;
      const launcher = new LocalToolLauncher({ tools: localTools, receipts, stopGraceMs });
      assertReceiptsBehindJournal(store, receipts, acceptLoss, log);
      const gateway = new RouterGateway({ launcher, receipts, localTools, tools, agents: options.agents, models: options.models, skills: options.skills, approvals: options.approvals, credentials: options.credentials, attemptsInFlightMax: profile.attemptsInFlightMax, log, journalSeqOf: (runId) => store.lastSeqOf(runId) });
      const scripts = await createScriptImports();
      closers.push(() => scripts.evaluator.dispose());
      const engine = await EngineInstance.create(routerComponentLoader(), { load: (runId) => store.load(runId), ...scripts, sha256Hex, log });
      const resolveAuthority = authorityResolver(options.authorities);
      const kernel = new Kernel({
        store,
        engine,
        gateway,
        log,
        authority: resolveAuthority,
        capture: { ...defaultCapture, ...options.capture },
        sha256: sha256Digest,
        timers: false,
        flushMode: 'manual',
        activating: (runId) => crashes.activating(runId),
        queued: () => host?.nudge(),
      });
      const recovery: RecoveryReport = { runs: 0, settledFromReceipts: 0, rerun: 0, unknown: 0, orphansStopped: 0, receiptsRetired: 0, parked: 0 };
      host = new RouterHost(profile, kernel, engine, store, commitLatency, receipts, gateway, localTools, resolveAuthority, log, options.cadenceMs ?? profile.cadenceMs, stopGraceMs, () => scripts.evaluator.dispose(), recovery, crashes, externalMemory);
      await host.deriveProjections();
      host.recover();
      host.arm();
      return host;
    } catch (err) {
      for (const close of closers.reverse()) {
        try {
          close();
        } catch {
          // Already failing: the first error is the one reported.
        }
      }
      throw err;
    }
  }

  // ---- startup recovery -------------------------------------------------------------------

  /**
   * Runs recorded before the journal kept projections get theirs once, from the engine's fold of
   * their journal; a compaction then writes them to the file (in the current format).
   */
  private async deriveProjections(): Promise<void> {
    const records = this.store.runsWithoutProjection();
    for (const record of records) await this.kernel.projectionOf(record);
    if (records.length > 0 || this.store.formatVersion < journalFileKind.version) {
      this.store.compact();
      this.compactions++;
    }
  }

  private recover(): void {
    const attempts = new Map<string, AttemptRecovery>(recoverAttempts(this.receipts.all()).map((r) => [r.invocationId, r]));
    // A process still running from the previous host: its pipes died with that host, so its
    // result can never be read. Stop it exactly; its outcome is unknown.
    for (const [id, r] of attempts) {
      if (r.state !== 'running') continue;
      stopOrphan(this.receipts, id, r.identity.pid);
      this.recovery.orphansStopped++;
      attempts.set(id, { state: 'needs_attention', invocationId: id, idempotent: r.idempotent, reason: 'process-gone', detail: 'stopped by recovery: its output was lost with the previous host' });
    }
    const referenced = new Set<string>();
    const open = this.store.listRuns({ limit: Number.MAX_SAFE_INTEGER }).filter((r) => !terminalStatuses.has(r.status));
    for (const record of open) {
      for (const call of inflightCalls(this.store, record.runId)) referenced.add(call.invocationId);
      // A parked run killed the processes that activated it: it waits for an operator.
      if (this.crashes.parked(record.runId)) {
        this.recovery.parked++;
        continue;
      }
      this.recoverRun(record.runId, attempts);
    }
    // Counts of runs that ended, or that the journal no longer holds (a loss accepted), go.
    const openIds = new Set(open.map((r) => r.runId));
    this.crashes.forget(this.crashes.runIds().filter((runId) => !openIds.has(runId)));
    // Receipts the journal no longer needs: attempts of finished runs or already recorded.
    const retire = [...attempts.values()].filter((r) => !referenced.has(r.invocationId) && (r.state === 'settled' || r.state === 'lost')).map((r) => r.invocationId);
    if (retire.length > 0) this.recovery.receiptsRetired = this.receipts.retire(retire);
  }

  /** Resumes one run a previous process left (or an unparked one) from its projection and receipts. */
  private recoverRun(runId: string, attempts: ReadonlyMap<string, AttemptRecovery>): void {
    const isLocal = (request: { kind: string; name: string }) => request.kind === 'tool' && Object.hasOwn(this.localTools, request.name);
    const inflight = inflightCalls(this.store, runId);
    const plan = planRunRecovery(runId, inflight, attempts, isLocal);
    this.recovery.runs++;
    this.recovery.settledFromReceipts += plan.settled.length;
    this.recovery.rerun += plan.rerun.length;
    this.recovery.unknown += plan.unknown.length;
    this.active.add(runId);
    const facts: Fact[] = [];
    for (const s of plan.settled) {
      const outcome = outcomeOfCompletion(s.recovery.completion);
      facts.push(outcome.ok ? { type: 'capability-completed', invocationId: s.invocationId, ok: true, output: outcome.output } : { type: 'capability-completed', invocationId: s.invocationId, ok: false, error: outcome.error });
      this.gateway.settled.set(s.invocationId, runId);
    }
    const evidence = attemptEvidence(plan.unknown, attempts, (id) => this.receipts.get(id));
    const resume = () => {
      const workflowId = this.workflowIdOf(runId);
      const authority = this.resolveAuthority({ runId, workflowId, resuming: true });
      const afterRestart = plan.unknown.length > 0;
      facts.push({ type: 'resume-requested', by: 'router-restart', ...(authority ? { authority } : {}), afterRestart, effects: this.gateway.effects(), ...(afterRestart && Object.keys(evidence).length > 0 ? { attempts: evidence } : {}) });
      for (const fact of facts) this.kernel.deliver(runId, fact, 'router-restart').catch((err) => this.log('warn', `recovery of run ${runId}: ${(err as Error).message}`));
    };
    if (plan.rerun.length === 0) {
      resume();
      return;
    }
    // Attempts that never started run again (same invocation id) through admission and
    // dispatch; the run is resumed once all of them have an outcome.
    let left = plan.rerun.length;
    for (const call of plan.rerun) {
      const request = requestOf(this.store, runId, call);
      // The kernel's abort path: a cancellation of the run reaches this attempt as any other.
      const adopted = this.kernel.adoptCall(request.invocationId);
      this.gateway.execute({ ...request, reissued: true }, { signal: adopted.signal, invocationId: request.invocationId, reissued: true }).then((outcome) => {
        adopted.release();
        if (outcome === undefined) return; // the host is stopping: the next start recovers it
        facts.push(outcome.ok ? { type: 'capability-completed', invocationId: request.invocationId, ok: true, output: outcome.output } : { type: 'capability-completed', invocationId: request.invocationId, ok: false, error: outcome.error });
        if (--left === 0) resume();
      });
    }
  }

  private workflowIdOf(runId: string): string {
    const tail = this.store.load(runId);
    if (!tail) throw asError(runNotFound(runId));
    return workflowIdOf(planOfTail(tail));
  }

  // ---- the cadence ------------------------------------------------------------------------

  /**
   * Arms the next cycle `delayMs` from now (the first one at once). An idle router backs off: a
   * cycle that did no work doubles the delay, up to `idleCadenceMsMax`, but never past the next
   * wake-up a run asked for; a cycle with work, or any fact queued (`nudge`), brings it back to
   * `cadenceMs`.
   */
  private arm(): void {
    if (this.stopping) return;
    let delay = this.cycles === 0 ? 0 : this.delayMs;
    const next = this.kernel.nextWakeup();
    if (next !== undefined) delay = Math.min(delay, Math.max(this.cadenceMs, next - this.kernel.now()));
    this.timerDueAt = performance.now() + delay;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopping) return;
      this.cycleRunning = this.cycle().finally(() => {
        this.cycleRunning = undefined;
        this.arm();
      });
    }, delay);
  }

  /** New work arrived (a fact queued, an operator action): the next cycle comes within `cadenceMs`. */
  private nudge(): void {
    this.delayMs = this.cadenceMs;
    this.nudged = true; // a cycle running now must not back off past it
    if (this.timer === undefined || this.stopping || this.timerDueAt - performance.now() <= this.cadenceMs) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.arm();
  }

  /** Runs one phase; answers the units of work it did (0 when it failed). */
  private async phase(name: (typeof phases)[number], work: () => unknown): Promise<number> {
    try {
      const done = await work();
      return typeof done === 'number' ? done : 0;
    } catch (err) {
      this.phaseFailures[name]++;
      this.log('error', `cycle ${this.cycles}, phase ${name}: ${(err as Error).message}; retried next cycle`);
      return 0;
    }
  }

  /** One cycle: the five phases in their fixed order, then housekeeping. */
  private async cycle(): Promise<void> {
    this.cycles++;
    const p = this.profile;
    const g = this.gateway;
    let work = await this.phase('cancellation', () => withinBudget(p.cancellation, (n) => g.converge(n)));
    work += await this.phase('schedule', () =>
      withinBudget(p.schedule, (n) => {
        const due = this.kernel.dueWakeups(n);
        for (const runId of due) this.kernel.wake(runId).catch((err) => this.log('warn', `wake-up of ${runId}: ${(err as Error).message}`));
        return due.length;
      }),
    );
    work += await this.phase('frontier', () => withinBudget(p.frontier, (n) => this.kernel.flush(n)));
    work += await this.phase('admission', () => withinBudget(p.admission, (n) => g.admit(n)));
    work += await this.phase('dispatch', () => withinBudget(p.dispatch, (n) => g.dispatch(n)));
    await this.phase('housekeeping', () => this.housekeeping());
    const nudged = this.nudged;
    this.nudged = false;
    if (work > 0 || nudged) this.delayMs = this.cadenceMs;
    else {
      this.delayMs = Math.min(this.delayMs * 2, Math.max(this.cadenceMs, idleCadenceMsMax));
      this.idleCycles++;
    }
    if (this.firstCycleMs === undefined) this.firstCycleMs = performance.now();
    if (this.idleWaiters.length > 0 && this.isIdle()) for (const w of this.idleWaiters.splice(0)) w();
    for (const w of this.cycleWaiters.splice(0)) w();
  }

  private housekeeping(): void {
    if (this.store.compactionDue()) {
      this.store.compact();
      this.compactions++;
    }
    if (this.gateway.settled.size >= retireAfterSettled || (this.gateway.settled.size > 0 && this.cycles - this.lastRetireCycle >= retireEveryCycles)) {
      this.lastRetireCycle = this.cycles;
      this.retireRecorded();
    }
    for (const runId of this.active) {
      const record = this.store.getRun(runId);
      if (record && terminalStatuses.has(record.status)) this.active.delete(runId);
    }
    const parked = [...this.crashes.parkedRuns().keys()];
    if (parked.length > 0) this.crashes.forget(parked.filter((runId) => terminalStatuses.has(this.store.getRun(runId)?.status ?? '')));
  }

  /** Retires the receipts of settled attempts whose outcome the journal now holds. */
  private retireRecorded(): void {
    const byRun = new Map<string, string[]>();
    for (const [id, runId] of this.gateway.settled) byRun.set(runId, [...(byRun.get(runId) ?? []), id]);
    const done: string[] = [];
    for (const [runId, ids] of byRun) {
      const record = this.store.getRun(runId);
      const inflight = new Set(record && !terminalStatuses.has(record.status) ? (record.outcome?.calls ?? []).map((c) => c.invocationId) : []);
      for (const id of ids) if (!inflight.has(id)) done.push(id);
    }
    if (done.length === 0) return;
    this.receiptsRetired += this.receipts.retire(done);
    for (const id of done) this.gateway.settled.delete(id);
  }

  /** No queued or running work and every run this host knows of is terminal or paused. */
  private isIdle(): boolean {
    if (this.gateway.busy > 0) return false;
    for (const runId of this.active) {
      const record = this.store.getRun(runId);
      if (!record || !(terminalStatuses.has(record.status) || record.status === 'paused')) return false;
    }
    return this.kernel.dueWakeups(1).length === 0;
  }

  /** Resolves after the first cycle that ends idle (see `isIdle`). */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  // ---- the SDK surface --------------------------------------------------------------------

  validate(template: unknown) {
    return validateTemplate(this.engine, template);
  }

  compile(template: unknown, dependencies: { template: unknown; revision: number }[] = []): ExecutionPlan {
    try {
      return this.engine.compile({ root: { template }, dependencies });
    } catch (err) {
      throw asError(err);
    }
  }

  /** Refuses a plan whose scripts may grow the process past the profile's memory budget. */
  private assertScriptBudget(plan: ExecutionPlan): void {
    const over = scriptsOverBudget(plan, this.profile.scriptMemoryBytesMax);
    if (over.length === 0) return;
    const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
    throw new RouterError('router.script-budget', `${over.map((o) => `${o.node} asks ${mib(o.memoryBytes)}`).join(', ')} of script memory; the ${this.profile.name} profile evaluates scripts with at most ${mib(this.profile.scriptMemoryBytesMax)} (limits.memoryBytes)`, { scripts: over, scriptMemoryBytesMax: this.profile.scriptMemoryBytesMax });
  }

  /** Starts a run; resolves once `run.accepted` is durable (within a cycle or two). */
  async launch(target: LaunchTarget | Record<string, unknown>, input: unknown = {}, options: { runId?: string; timeoutMs?: number; correlation?: unknown } = {}): Promise<RouterRunHandle> {
    if (this.stopping) throw new RouterError('host.stopping', 'the router host is stopping; no run starts');
    mapErrors(RouterError, () => assertRunInput(input));
    const t: LaunchTarget = launchTargetOf(target, ['inline', 'plan'] as const);
    const plan = t.type === 'plan' ? t.plan : this.compile(t.template, t.dependencies ?? []);
    this.assertScriptBudget(plan);
    const templateKey = templateKeyOf(t, plan);
    const { runId, authority } = mapErrors(RouterError, () =>
      launchIdentity({ plan, templateKey, runId: options.runId, resolveAuthority: this.resolveAuthority, now: this.kernel.now(), randomBytes: (n) => randomBytes(n) }),
    );
    this.active.add(runId);
    try {
      await this.kernel.launch({ runId, plan, templateKey, input, authority, timeoutMs: options.timeoutMs, correlation: options.correlation, actor: 'router' });
    } catch (err) {
      this.active.delete(runId);
      throw asError(err);
    }
    return { runId, result: this.kernel.waitFor(runId, false), settled: () => this.settledOf(runId) };
  }

  /** A handle on a run this host holds: `settled()` resolves at its next stop (see `settledOf`). */
  follow(runId: string): { runId: string; settled(): Promise<RunOutcome> } {
    return { runId, settled: () => this.settledOf(runId) };
  }

  /**
   * Terminal, or paused with nothing of the run left in the gateway (a run is paused while an
   * approval waits for admission; it is settled only once the approval is left to a person).
   */
  private async settledOf(runId: string): Promise<RunOutcome> {
    for (;;) {
      const outcome = await this.kernel.waitFor(runId, true);
      if (outcome.status !== 'paused' || !this.gateway.hasWorkFor(runId) || this.stopping) return outcome;
      await new Promise<void>((resolve) => this.cycleWaiters.push(resolve));
    }
  }

  getRun(runId: string): RunView {
    const record = this.store.getRun(runId);
    if (!record) throw asError(runNotFound(runId));
    return runView(record, outcomeOfRecord(record, record.outcome ?? {}));
  }

  listRuns(filter?: { statuses?: string[]; limit?: number }) {
    return this.store.listRuns(filter);
  }

  /** What `router list` prints per run: its status and, from the projection, what it waits for. */
  listRunSummaries(filter?: { statuses?: string[]; limit?: number }): RunSummary[] {
    return this.store.listRuns(filter).map((r) => {
      const p = r.outcome;
      return {
        runId: r.runId,
        status: r.status,
        ...(p?.pausedReason ? { pausedReason: p.pausedReason } : {}),
        lastSeq: r.lastSeq,
        createdAt: r.createdAt,
        updatedAt: r.updatedAt,
        ...(p?.attention?.length ? { attention: p.attention } : {}),
        ...(p?.approvals?.length ? { approvals: p.approvals.map((a) => ({ nodeId: a.nodeId, ...(a.item !== undefined ? { item: a.item } : {}) })) } : {}),
        ...(p?.error ? { error: { code: p.error.code, message: p.error.message } } : {}),
        ...(this.crashes.parked(r.runId) ? { parked: this.crashes.parked(r.runId) } : {}),
      };
    });
  }

  /** Asks for a run's cancellation; the next cycles converge it (processes get an exact stop). */
  cancel(runId: string, reason = 'cancelled'): Promise<ActivationSummary> {
    if (!this.store.getRun(runId)) return Promise.reject(asError(runNotFound(runId)));
    // Until the cancellation is committed nothing of the run starts; then the signals of the
    // invocations it cancelled are aborted and dispatch settles them without starting them.
    const release = this.gateway.holdForCancel(runId);
    const delivered = this.kernel.deliver(runId, { type: 'cancel-requested', reason, by: 'router' }, 'router');
    delivered.then(release, release);
    return delivered;
  }

  /**
   * Approves or rejects a `human.approval@1` node that is waiting; recorded with who decided, who
   * must be one of the node's `approvers` when it names any. Throws at once when there is nothing
   * to decide.
   */
  approve(runId: string, nodeId: string, decision: { by: string; approved?: boolean; comment?: string }): Promise<ActivationSummary> {
    const parked = this.refuseParked(runId, 'approve');
    if (parked) return parked;
    const invocationId = mapErrors(RouterError, () => {
      const record = this.store.getRun(runId);
      return approvalTarget(record, record?.outcome ?? {}, runId, nodeId, decision.by);
    });
    return this.kernel.deliver(runId, approvalFact(invocationId, { approved: decision.approved !== false, by: decision.by, comment: decision.comment }), `operator:${decision.by}`);
  }

  /** Settles a node (or foreach item) whose outcome is unknown after a restart. */
  resolve(runId: string, nodeId: string, resolution: { by: string; succeeded?: unknown; retry?: boolean; fail?: string; item?: number }): Promise<ActivationSummary> {
    if (!this.store.getRun(runId)) return Promise.reject(asError(runNotFound(runId)));
    const parked = this.refuseParked(runId, 'resolve');
    if (parked) return parked;
    return this.kernel.deliver(
      runId,
      { type: 'outcome-resolved', nodeId, ...resolutionFields(resolution) },
      `operator:${resolution.by}`,
    );
  }

  /** A parked run is activated only to be cancelled or after `unpark`. */
  private refuseParked(runId: string, action: string): Promise<never> | undefined {
    const record = this.crashes.parked(runId);
    if (!record) return undefined;
    return Promise.reject(new RouterError('run.parked', `run ${runId} is parked: ${record.crashes} processes in a row died activating it; ${action} would activate it again: cancel it, or unpark it first (agent-workflow router unpark)`, record));
  }

  /** The parked run, with how many processes it killed, or `undefined`. */
  parkedRecord(runId: string): CrashRecord | undefined {
    return this.crashes.parked(runId);
  }

  /**
   * Lets a parked run be activated again (say once its cause is fixed: a larger memory budget, a
   * new router version): its crash count starts from zero and it is recovered as after a restart.
   */
  unpark(runId: string): { runId: string; status: string } {
    const record = this.store.getRun(runId);
    if (!record) throw asError(runNotFound(runId));
    if (!this.crashes.parked(runId)) throw new RouterError('run.not-parked', `run ${runId} is not parked`);
    if (this.stopping) throw new RouterError('host.stopping', 'the router host is stopping');
    this.crashes.unpark(runId);
    if (!terminalStatuses.has(record.status)) {
      const attempts = new Map<string, AttemptRecovery>(recoverAttempts(this.receipts.all()).map((r) => [r.invocationId, r]));
      for (const [id, r] of attempts) {
        if (r.state !== 'running') continue;
        attempts.set(id, { state: 'needs_attention', invocationId: id, idempotent: r.idempotent, reason: 'identity-unverifiable', detail: 'a process of this invocation is still running; its output cannot be read' });
      }
      this.recoverRun(runId, attempts);
    }
    return { runId, status: record.status };
  }

  /** Every event of a run, ascending by seq. */
  events(runId: string): any[] {
    return readAllEvents(this.store, runId);
  }

  /** A self-contained export of a run: events, pinned plan, captured artifacts (the Node host's format). */
  exportRun(runId: string): RunExport {
    return mapErrors(RouterError, () => exportFromSyncStore(this.store, runId));
  }

  /** Replays a stored run: `inspect` folds the journal; `recorded` re-runs it with no gateway, from its captured artifacts. */
  replay(runId: string, mode: 'inspect' | 'recorded' = 'recorded'): Record<string, unknown> {
    return mapErrors(RouterError, () => this.engine.replay(replayRequestOf(replaySourceFromSyncStore(this.store, runId), mode)));
  }

  stats(): RouterStats {
    return {
      profile: this.profile.name,
      cycles: this.cycles,
      firstCycleMs: this.firstCycleMs,
      phaseFailures: { ...this.phaseFailures },
      commitLatency: this.commitLatency.summary(),
      compactions: this.compactions,
      receiptsRetired: this.receiptsRetired + this.recovery.receiptsRetired,
      recovery: { ...this.recovery },
      inFlight: this.gateway.busy,
      parked: this.crashes.parkedRuns().size,
      idleCycles: this.idleCycles,
      nextCycleDelayMs: this.delayMs,
      memoryCollections: this.externalMemory.stats().collections,
    };
  }

  /**
   * Stops the host: (1) no new cycle, admission frozen (queued requests never start);
   * (2) execution drained: every local process gets an exact `shutdown` stop and settles from
   * its completion receipt; (3) the outcomes are committed; (4) storage is closed. Concurrent
   * calls share one promise.
   */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.cycleRunning;
    this.gateway.freeze();
    await this.gateway.drain(this.stopGraceMs);
    try {
      await this.kernel.close();
      this.retireRecorded();
    } catch (err) {
      this.log('error', `stop: settling the last outcomes failed: ${(err as Error).message}; the next start recovers them from the receipts`);
    } finally {
      this.receipts.close();
      this.store.close();
      this.disposeScripts();
      this.crashes.close();
      for (const w of [...this.idleWaiters.splice(0), ...this.cycleWaiters.splice(0)]) w();
    }
  }
}

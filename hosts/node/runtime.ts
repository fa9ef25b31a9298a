// The embedded SDK: `WorkflowRuntime` validates, launches, inspects, resumes and cancels runs of
// the engine component over one store bundle (SQLite or PostgreSQL, picked from the store URL).
//
// `open` is the one place the add-ons are wired: live streams, telemetry and the trace context
// are built here from the kernel and the store; the worker, the delivery sender and the catalog
// are built on first use from narrow interfaces (`WorkerHost`, the outbox, `CatalogStorage`).
// None of them holds the runtime. What a launch pins lives in sdk/launch.ts, the operator inbox
// in sdk/operator-inbox.ts, replays in sdk/replay.ts.
import type { EngineInstance } from '../core/engine-instance.js';
import { approvalTarget, launchAuthority, validateTemplate, exportFromStore, isTerminal, pinnedDependencies, planOfTail, runNotFound, runView, workflowIdOf, type AuthorityResolver, type LaunchTarget, type RunView } from '../core/host-runtime.js';
import { resolutionFields, type Resolution } from '../core/operator.js';
import { tracePage, type Operator, type TracePage } from '../core/operator-api.js';
import { KernelError, type Kernel, type RunOutcome } from '../core/kernel.js';
import { outcomeOfCommitted } from '../core/projection.js';
import { leaseDefaults } from '../core/leases.js';
import type { CommandResult, OperatorCommand } from '../core/ownership-store.js';
import { asError, WorkflowError } from './sdk/errors.js';
import type { NodeJournalStore, StoreBundle } from './stores/open-store.js';
import { terminalStatuses, type ActivationSummary, type Authority, type ExecutionPlan, type HostLog, type ValidationReport } from '../core/types.js';
import type { ListedCapability } from './sdk/gateway.js';
import type { RunListFilter } from '../core/store.js';
import type { RunExport } from '../core/export-format.js';
import { LaunchPlanner, idempotentRunId, type PreparedLaunch } from './sdk/launch.js';
import { OperatorInbox } from './sdk/operator-inbox.js';
import { assertApproveOptions, assertCommandIdArgument, assertPageOptions, assertResolutionArgument, assertRunIdArgument, assertRunListFilter } from './sdk/arguments.js';
import { runHandle } from './sdk/run-handle.js';
import { openParts, type RuntimeParts } from './sdk/open.js';
import type { CommandOutcome, LaunchOptions, NodeType, RuntimeDeliveries, RuntimeOptions, WorkflowRunHandle } from './sdk/runtime-types.js';
import { runtimeDeliveries } from './delivery/outbox.js';
import { NodeDefinitionRegistry, RunNeedsAttentionError, runCompatibility, WorkflowCatalog, type RunCompatibility } from './catalog/catalog.js';
import type { TriggerStorage } from './stores/trigger-storage.js';
import { BindingCatalog } from './triggers/bindings.js';
import { runtimeArtifacts, type CollectReport, type RotationReport, type RuntimeArtifacts } from './artifacts/index.js';
import type { LiveItem, LiveOptions } from './observe/live.js';
import type { TelemetryStats } from './observe/telemetry.js';
import type { Worker, WorkerOptions } from './worker/worker.js';

export type { AuthorityResolver, LaunchTarget, LiveItem, LiveOptions, TelemetryStats };
export type { DeliveryOptions, DrainReport } from './delivery/deliverer.js';
export type { DeliveryRecord, DeliveryState } from '../core/delivery-outbox.js';
export type { DeliveryTarget } from './delivery/target.js';
export type { TelemetryOptions } from './observe/telemetry.js';
export type { CollectReport, RotationReport, RuntimeArtifacts };
export type { CommandOutcome, LaunchOptions, NodeType, RuntimeDeliveries, RuntimeOptions, WorkflowRunHandle };
export { WorkflowError, idempotentRunId };

export class WorkflowRuntime implements Operator {
  /** The run journal of this runtime's store. */
  readonly store: NodeJournalStore;
  private readonly launches: LaunchPlanner;
  private readonly inbox: OperatorInbox;

  readonly kernel: Kernel;
  readonly engine: EngineInstance;
  readonly ownerId: string;
  private readonly stores: StoreBundle;
  private readonly resolveAuthority: AuthorityResolver;
  private readonly log: HostLog;

  private constructor(private readonly parts: RuntimeParts) {
    this.nodeDefinitions = parts.nodeDefinitions;
    ({ kernel: this.kernel, engine: this.engine, ownerId: this.ownerId, stores: this.stores, resolveAuthority: this.resolveAuthority, log: this.log } = parts);
    const { kernel, engine, stores, ownerId, pollMs } = parts;
    this.store = stores.journal;
    const { resolveAuthority: resolve, nodeDefinitions } = this;
    this.launches = new LaunchPlanner({ engine, catalog: () => this.catalog, nodeDefinitions, resolveAuthority: resolve, now: () => kernel.now() });
    this.inbox = new OperatorInbox({ kernel, store: stores.journal, ownership: stores.ownership, ownerId, pollMs, liveWorkers: () => this.liveWorkers(), wakeWorkers: () => this.wakeWorkers() });
  }

  /** Opens the store and the engine and wires the add-ons (sdk/open.ts). */
  static async open(options: RuntimeOptions = {}): Promise<WorkflowRuntime> {
    return new WorkflowRuntime(await openParts(options));
  }

  private deliveriesFacade?: RuntimeDeliveries;
  private artifactsFacade?: RuntimeArtifacts;

  /** The outbox of result deliveries (see docs/triggers.md, "Result delivery"). */
  get deliveries(): RuntimeDeliveries {
    return (this.deliveriesFacade ??= runtimeDeliveries(this.stores.deliveries, this.ownerId, this.parts.deliveryOptions, this.kernel.now, this.log));
  }

  private async record(runId: string) {
    assertRunIdArgument(runId);
    const record = await this.store.getRun(runId);
    if (!record) throw asError(runNotFound(runId));
    return record;
  }

  /** Validates a template; one with script nodes loads the script sandbox first. */
  async validate(template: unknown): Promise<ValidationReport> {
    await this.engine.ready();
    return this.engine.withScripts(() => validateTemplate(this.engine, template, this.nodeDefinitions.requestDefinitions()));
  }

  /** Compiles a template and its `workflow.call` dependencies into a pinned plan. */
  async compile(template: unknown, dependencies: { template: unknown; revision: number }[] = [], revision?: number): Promise<ExecutionPlan> {
    await this.engine.ready();
    return this.engine.withScripts(() => this.launches.compileNow(template, dependencies, revision));
  }

  /**
   * Starts a run. `published` compiles the catalog revision and the closure of the revisions it
   * calls; `inline` compiles the given template (development); both pin the same kind of plan.
   */
  async launch(target: LaunchTarget | Record<string, unknown>, launchOptions: LaunchOptions = {}): Promise<WorkflowRunHandle> {
    const prepared = await this.prepareLaunch(target, launchOptions);
    if (prepared.queued) {
      try {
        const queued = await this.stores.ownership.enqueue(prepared.queued, this.kernel.now());
        return this.handle(queued.runId);
      } catch (err) {
        throw asError(err);
      }
    }
    const { runId, plan, templateKey, authority, options, actor, delivery } = prepared;
    if (options.idempotencyKey !== undefined && (await this.store.getRun(runId))) return this.handle(runId);
    this.parts.traces.remember(runId, options.correlation);
    let summary: ActivationSummary;
    try {
      // A run id that neither the caller nor an idempotency key named was drawn at random by `prepareLaunch`.
      const fresh = options.runId === undefined && options.idempotencyKey === undefined;
      summary = await this.kernel.launch({ runId, plan, templateKey, input: options.input ?? {}, authority, timeoutMs: options.timeoutMs, correlation: options.correlation, actor, ...(delivery ? { delivery } : {}), ...(fresh ? { fresh } : {}) });
    } catch (err) {
      throw asError(err);
    }
    return this.handle(runId, true, terminalStatuses.has(summary.status) ? outcomeOfCommitted(summary) : undefined);
  }

  /**
   * Checks a launch and pins its plan, run id and authority without starting anything. For a
   * background launch, `queued` is what `enqueue` commits: a trigger commits it together with
   * its ingress record, in one transaction (see triggers/ingress.ts).
   */
  prepareLaunch(target: LaunchTarget | Record<string, unknown>, launchOptions: LaunchOptions = {}): Promise<PreparedLaunch> {
    return this.launches.prepareLaunch(target, launchOptions);
  }

  /** Wakes this process's workers: something was queued (by `launch`, or a trigger's own commit). */
  wakeWorkers(): void {
    for (const w of this.workers) w.wake();
  }

  /** Workers started in this process: woken when this process queues work. */
  private readonly workers = new Set<import('./worker/worker.js').Worker>();

  /** Workers alive on this store (heartbeat within the last three lease lifetimes). */
  async liveWorkers() {
    return this.stores.ownership.liveWorkers(this.kernel.now(), 3 * (this.kernel.leases?.ttlMs ?? leaseDefaults.ttlMs));
  }

  /** A worker in this process: claims queued runs and runs whose owner is gone (see worker/worker.ts). */
  async startWorker(options: WorkerOptions = {}): Promise<Worker> {
    const { Worker } = await import('./worker/worker.js');
    const worker = new Worker(
      {
        kernel: this.kernel,
        ownership: this.stores.ownership,
        ownerId: this.ownerId,
        startsQueued: (runId, correlation) => this.startsQueued(runId, correlation),
        launchAuthorityOf: (runId, plan, requested) => this.launchAuthorityOf(runId, plan, requested),
        authorityOf: (runId, plan) => this.authorityOf(runId, plan),
        planOfRun: (runId) => this.planOfRun(runId),
        deliveries: this.deliveries,
        stopped: (w) => this.workers.delete(w),
      },
      options,
    );
    worker.start();
    this.workers.add(worker);
    return worker;
  }

  private catalogInstance?: WorkflowCatalog;

  /**
   * Custom node definitions of this host (the options' `nodes`, and `register`ed ones): carried
   * by every compile and validate request, run by the gateway.
   */
  readonly nodeDefinitions: NodeDefinitionRegistry;

  /** Drafts and published revisions, in the same database as the journal (SQLite or PostgreSQL). */
  get catalog(): WorkflowCatalog {
    this.catalogInstance ??= new WorkflowCatalog(this.stores.catalog(), {
      engine: { validate: (t) => this.validate(t), compile: (t, deps, revision) => this.compile(t, deps, revision) },
      nodeDefinitions: this.nodeDefinitions,
      now: this.kernel.now,
    });
    return this.catalogInstance;
  }

  private bindingsInstance?: BindingCatalog;

  /** Bindings and the ingress journal, in the journal's database (SQLite or PostgreSQL). */
  get triggerStorage(): TriggerStorage {
    return this.stores.triggers();
  }

  /** Workflow bindings: what connects a webhook, a DingTalk robot or a cron schedule to a published revision. */
  get bindings(): BindingCatalog {
    this.bindingsInstance ??= new BindingCatalog(this.triggerStorage, this.catalog, this.kernel.now);
    return this.bindingsInstance;
  }

  /** The store's artifacts: retention by the deployment's TTL and key rotation (artifacts/index.ts). */
  get artifacts(): RuntimeArtifacts {
    this.artifactsFacade ??= runtimeArtifacts(this.store, { retentionDays: this.parts.retentionDays, codec: this.parts.artifactCodec, now: () => this.kernel.now() });
    return this.artifactsFacade;
  }

  /**
   * The node types a template may use with this runtime: the engine's built-in kinds, then the
   * definitions this host registers, each with its `config` schema (and a custom one with its effect).
   */
  nodeTypes(): NodeType[] {
    const builtIn = (this.engine.describe().nodeTypes as NodeType[] | undefined) ?? [];
    const custom = this.nodeDefinitions.list().map(
      (d): NodeType => ({
        uses: d.uses,
        label: d.label ?? d.uses,
        capability: 'node',
        configSchema: d.configSchema ?? {},
        effect: d.effect ?? 'unknown',
        ...(d.description !== undefined ? { description: d.description } : {}),
        ...(d.outputSchema !== undefined ? { outputSchema: d.outputSchema } : {}),
        ...(d.implementationDigest ? { implementationDigest: d.implementationDigest } : {}),
        custom: true,
      }),
    );
    return [...builtIn, ...custom];
  }

  /** The node-definition-set hash a plan compiled now would pin (engine + host definitions). */
  nodeDefinitionSetHash(): string {
    return this.nodeDefinitions.setHash(this.engine.describe().nodeDefinitionSetHash as string);
  }

  /** Whether this engine and host can continue a stored run as pinned; never guesses. */
  async checkRun(runId: string): Promise<RunCompatibility> {
    assertRunIdArgument(runId);
    const tail = await this.store.load(runId);
    if (!tail) throw asError(runNotFound(runId));
    const d = this.engine.describe() as { flags: string[]; checkpointSchemaVersion: number };
    const plan = planOfTail(tail);
    const checkpoint = tail.checkpoint ? (JSON.parse(new TextDecoder().decode(tail.checkpoint)) as { checkpointVersion?: unknown }) : undefined;
    const implementationOf = (uses: string) => {
      const definition = this.nodeDefinitions.get(uses);
      return definition && (definition.implementationDigest ?? null);
    };
    return runCompatibility(runId, plan, checkpoint, { flags: d.flags, checkpointSchemaVersion: d.checkpointSchemaVersion, nodeDefinitionSetHash: this.nodeDefinitionSetHash(), implementationOf });
  }

  /** Throws `RunNeedsAttentionError` (code `run.needs-attention`, with the run id) when `checkRun` refuses. */
  async assertRunnable(runId: string): Promise<void> {
    const report = await this.checkRun(runId);
    if (!report.ok) throw new RunNeedsAttentionError(runId, report.problems.filter((p) => p.severity === 'needs_attention'));
  }

  /** A handle on a run (sdk/run-handle.ts); `carriedOutHere`: this process is carrying it out. */
  private handle(runId: string, carriedOutHere = false, ended?: RunOutcome): WorkflowRunHandle {
    return runHandle(runId, carriedOutHere, { waitFor: (id, orPaused) => this.kernel.waitFor(id, orPaused), cancel: (id, reason) => this.cancel(id, { reason }), live: (id, options) => this.live(id, options) }, ended);
  }

  /**
   * The committed events of a run after `afterSeq` (default 0), then each new commit once it is
   * durable, whichever process of the store runs it: in seq order, each exactly once. A
   * subscriber that falls more than its buffer behind gets a `gap` item and reads what it
   * missed from the journal; the run never waits for it. Tools' `context.progress(data)` comes
   * as live-only `progress` items (never journaled, lossy). Ends after the run's terminal commit;
   * on a paused run it stays open (the run may continue) until `signal` aborts or the caller
   * leaves the loop. See docs/observability.md.
   */
  async *live(runId: string, options: LiveOptions = {}): AsyncGenerator<LiveItem, void, undefined> {
    try {
      yield* this.parts.live.subscribe(runId, options);
    } catch (err) {
      throw asError(err);
    }
  }

  async getRun(runId: string): Promise<RunView> {
    const record = await this.record(runId);
    return runView(record, await this.kernel.outcomeFromStore(runId));
  }

  async listRuns(filter?: RunListFilter) {
    assertRunListFilter(filter);
    return this.store.listRuns(filter);
  }

  /** How many runs each status has, in this store. */
  async countRuns(): Promise<Record<string, number>> {
    return this.store.countRuns();
  }

  /** A page of events, ascending by seq. */
  async readEvents(runId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<TracePage> {
    assertPageOptions(options);
    await this.record(runId);
    return tracePage(this.store, runId, options);
  }

  async command(runId: string, command: OperatorCommand, options: { timeoutMs?: number } = {}): Promise<CommandOutcome> {
    return this.inbox.command(runId, command, options);
  }

  /**
   * Commits a command to a run's inbox and returns its id, without applying it: the run's owner,
   * or a worker when the run has none, applies it (`commandResult` tells when).
   */
  post(runId: string, command: OperatorCommand): Promise<number> {
    return this.inbox.post(runId, command);
  }

  /**
   * Where a posted command stands: pending, applied (by whom), or refused (with the error). A
   * command posted to a run that had ended is stored refused (`run.terminal`); one still pending
   * when its run ended is refused by the first reader that sees the run ended (`settleEnded`).
   */
  async commandResult(commandId: number): Promise<CommandResult | undefined> {
    assertCommandIdArgument(commandId);
    return this.inbox.commandResult(commandId);
  }

  /**
   * Resumes a run (also one left by another process). The authority is resolved again. A
   * terminal run is not started again: its handle resolves with the recorded result. A run that
   * another live process owns is resumed by that process (through its inbox) and followed here.
   */
  async resume(runId: string, options: { by?: string } = {}): Promise<WorkflowRunHandle> {
    const record = await this.record(runId);
    if (isTerminal(record) || record.status === 'queued') return this.handle(runId);
    await this.assertRunnable(runId);
    try {
      await this.command(runId, { type: 'resume', by: options.by ?? 'sdk' });
    } catch (err) {
      // The run ended between the check above and the command (its owner finished it): there is
      // nothing left to resume, and its handle has the outcome.
      if (isTerminal(await this.record(runId))) return this.handle(runId);
      throw err;
    }
    return this.handle(runId, true);
  }

  /** A handle on any run of the store, followed through the store when another process runs it. */
  follow(runId: string): WorkflowRunHandle {
    assertRunIdArgument(runId);
    return this.handle(runId);
  }

  async cancel(runId: string, options: { reason?: string; by?: string } = {}): Promise<CommandOutcome> {
    const record = await this.record(runId);
    const reason = options.reason ?? 'cancelled';
    const by = options.by ?? 'sdk';
    if (isTerminal(record)) return this.kernel.outcomeFromStore(runId);
    if (record.status === 'queued' && (await this.stores.ownership.cancelQueued(runId, reason, by, this.kernel.now()))) return this.kernel.outcomeFromStore(runId);
    try {
      return await this.command(runId, { type: 'cancel', reason, by });
    } catch (err) {
      // The run ended on its own before its owner read the cancel: like a cancel of a run that
      // had already ended, the answer is its outcome.
      if (err instanceof WorkflowError && err.code === 'run.terminal') return this.kernel.outcomeFromStore(runId);
      throw err;
    }
  }

  async approve(runId: string, nodeId: string, options: { by: string; comment?: string; approved?: boolean; /** How long to wait for the command to be applied (default 30 s); then `command.pending`. */ timeoutMs?: number }): Promise<CommandOutcome> {
    assertApproveOptions(options);
    const record = await this.record(runId);
    const projection = isTerminal(record) ? {} : await this.kernel.projectionOf(record);
    let invocationId: string;
    try {
      invocationId = approvalTarget(record, projection, runId, nodeId, options.by);
    } catch (err) {
      throw asError(err);
    }
    return this.command(runId, { type: 'approve', nodeId, invocationId, approved: options.approved !== false, by: options.by, ...(options.comment !== undefined ? { comment: options.comment } : {}) }, options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {});
  }

  reject(runId: string, nodeId: string, options: { by: string; comment?: string }): Promise<CommandOutcome> {
    return this.approve(runId, nodeId, { ...options, approved: false });
  }

  /** Settles a node whose outcome is unknown (`needs_attention`); recorded with who did it. */
  async resolve(runId: string, nodeId: string, resolution: Resolution): Promise<CommandOutcome> {
    assertResolutionArgument(resolution);
    await this.record(runId);
    return this.command(runId, { type: 'resolve', nodeId, ...resolutionFields(resolution) });
  }

  /** A self-contained export of a run: events, pinned plan, captured artifacts. */
  async exportRun(runId: string): Promise<RunExport> {
    assertRunIdArgument(runId);
    try {
      return await exportFromStore(this.store, runId);
    } catch (err) {
      throw asError(err);
    }
  }

  /** Compiles an edited version of a run's root template against the run's pinned dependencies. */
  editedPlan(plan: ExecutionPlan, editedTemplate: unknown): Promise<ExecutionPlan> {
    return this.compile(editedTemplate, pinnedDependencies(plan));
  }

  /**
   * Resumes every run that is not terminal and that no live process owns (after a crash, in a
   * single-process deployment). Calls that were in flight in the process that died are reissued
   * when safe, or surfaced as needs_attention. Runs another live process owns are left to it.
   */
  async recoverPending(options: { by?: string; limit?: number } = {}): Promise<{ runId: string; status?: string; error?: string }[]> {
    const runs = await this.store.listRuns({ statuses: ['running', 'paused'], limit: options.limit ?? 10_000 });
    const out: { runId: string; status?: string; error?: string }[] = [];
    for (const run of runs) {
      try {
        await this.assertRunnable(run.runId);
        const grant = await this.kernel.takeLease(run.runId);
        if (!grant.ok) {
          out.push({ runId: run.runId, error: `${grant.code}: ${grant.message}` });
          continue;
        }
        await this.kernel.resume(run.runId, options.by ?? 'recovery', this.authorityOf(run.runId, await this.planOfRun(run.runId)));
        out.push({ runId: run.runId, status: (await this.store.getRun(run.runId))?.status });
      } catch (err) {
        out.push({ runId: run.runId, error: `${(err as { code?: string }).code ?? 'error'}: ${(err as Error).message}` });
      }
    }
    return out;
  }

  /**
   * A queued run this process starts (a worker's claim): its calls' trace ids come from the
   * launch's correlation, as for a run launched here, instead of a journal read at its first call.
   */
  startsQueued(runId: string, correlation: unknown): void {
    this.parts.traces.remember(runId, correlation);
  }

  /** The pinned plan of a stored run. */
  async planOfRun(runId: string): Promise<ExecutionPlan> {
    assertRunIdArgument(runId);
    const tail = await this.store.load(runId);
    if (tail) return planOfTail(tail);
    const queued = await this.stores.ownership.queuedLaunch(runId);
    if (queued) return JSON.parse(new TextDecoder().decode(queued.plan)) as ExecutionPlan;
    throw asError(runNotFound(runId));
  }

  /** The authority a queued run starts under (its launch's request, resolved now). */
  launchAuthorityOf(runId: string, plan: ExecutionPlan, requested?: Authority): Authority {
    return launchAuthority(this.resolveAuthority, { runId, workflowId: workflowIdOf(plan), ...(requested ? { requested } : {}) });
  }

  /** The authority a stored run resumes under (resolved again; `undefined` keeps the run's). */
  authorityOf(runId: string, plan: ExecutionPlan): Authority | undefined {
    return this.resolveAuthority({ runId, workflowId: workflowIdOf(plan), resuming: true });
  }

  async replay(runId: string, options: { mode: 'inspect' | 'recorded'; editedTemplate?: unknown } = { mode: 'inspect' }): Promise<Record<string, unknown>> {
    assertRunIdArgument(runId);
    return import('./sdk/replay.js').then((r) => r.replayStored(this, runId, options));
  }

  /**
   * `live` replay: a new run of the same pinned plan and input that calls the gateways again,
   * linked to the source run, and a comparison of every node's output by digest.
   */
  async replayLive(sourceRunId: string, options: { by?: string } = {}): Promise<Record<string, unknown>> {
    assertRunIdArgument(sourceRunId);
    return import('./sdk/replay.js').then((r) => r.replayLive(this, sourceRunId, options));
  }

  /**
   * The tools, agents and models a run may use under an authority (its scopes intersected with
   * what this host registered), for agents and consoles to show; see docs/observability.md.
   */
  capabilities(authority: Authority): ListedCapability[] {
    return this.parts.registered.list(authority);
  }

  /** What the OpenTelemetry exporter did (`undefined` when the runtime does not export). */
  telemetryStats(): TelemetryStats | undefined {
    return this.parts.exporter?.stats();
  }

  async close(): Promise<void> {
    // Workers still running stop claiming first (their calls in flight are handed back below,
    // as every call of a closing runtime is): a claim loop left running kept the store open.
    for (const w of [...this.workers]) await w.stop({ drainMs: 0 });
    await this.deliveriesFacade?.stop();
    this.parts.live.close();
    await this.kernel.close({ abortInflight: true });
    await this.parts.exporter?.close();
    await this.stores.close();
    this.parts.disposeScripts();
    this.parts.releaseTargets?.();
  }
}

export { KernelError };

// The embedded SDK: `WorkflowRuntime` validates, launches, inspects, resumes and cancels runs of
// the engine component, journaling to SQLite.
import { createHash } from 'node:crypto';
import { join, resolve as resolvePath } from 'node:path';
import { EngineInstance } from '../core/engine-instance.js';
import { approvalTarget, asHostError, authorityResolver, exportFromStore, isTerminal, launchIdentity, launchTargetOf, pinnedDependencies, planOfTail, replayRequestOf, replaySourceFromStore, runNotFound, runView, templateKeyOf, validateTemplate, workflowIdOf, type AuthorityResolver, type LaunchTarget, type ReplaySource, type RunView } from '../core/host-runtime.js';
import { assertRunInput } from '../core/json-input.js';
import { resolutionFields } from '../core/operator.js';
import { defaultCapture, Kernel, KernelError, type CapturePolicy, type RunOutcome } from '../core/kernel.js';
import { leaseDefaults } from '../core/leases.js';
import type { CommandResult, OperatorCommand, QueuedLaunch, RunOwnership } from '../core/ownership-store.js';
import type { JournalStore } from '../core/store.js';
import { WorkflowError } from './errors.js';
import { newOwnerId } from './owner-id.js';
import { pooledRandomBytes } from './random-pool.js';
import { openJournalStore } from './open-store.js';
import type { Authority, ExecutionPlan, HostLog, ValidationReport } from '../core/types.js';
import { nodeComponentLoader } from './component.js';
import { sha256Digest, sha256Hex } from '../shared/digest.js';
import type { RunExport } from '../core/export-format.js';
import { registryGateway, RegisteredCapabilities, type GatewayRegistry, type ListedCapability } from './gateway.js';
import { assertCaptureOptions, assertLaunchOptions, launchCorrelation } from './launch-options.js';
import { deliveryDigest, deliveryTargetOf, type DeliveryTarget } from './delivery-target.js';
import { DeliverySender, deliveryOptionsOf, type DeliveryOptions, type DrainReport } from './deliverer.js';
import type { DeliveryOutbox, DeliveryRecord, DeliveryState } from '../core/delivery-outbox.js';
import { deliveryLimits } from './limits.js';
import { SqliteJournalStore } from './journal.js';
import { NodeDefinitionRegistry, RunNeedsAttentionError, runCompatibility, WorkflowCatalog, type CatalogStorage, type RunCompatibility } from './catalog.js';
import { SqliteCatalogStorage } from './sqlite-catalog.js';
import { SqliteTriggerStorage } from './sqlite-triggers.js';
import type { TriggerStorage } from './trigger-storage.js';
import { BindingCatalog } from './bindings.js';
import { stderrLog } from './log.js';
import { LazyScriptImports } from '../shared/sandbox.js';
import { LiveStreams, withLiveProgress, type LiveItem, type LiveOptions } from './live.js';
import { TraceExporter, tracesUrlOf, type TelemetryOptions, type TelemetryStats } from './telemetry.js';
import { RunTraces, withTraceContext } from './trace-gateway.js';

export type { AuthorityResolver, LaunchTarget, LiveItem, LiveOptions, DeliveryOptions, DeliveryRecord, DeliveryState, DeliveryTarget, DrainReport, TelemetryOptions, TelemetryStats };

export interface RuntimeOptions extends GatewayRegistry {
  /** State directory; default `./.agent-workflow`. */
  dir?: string;
  /**
   * Where the journal lives: a `postgres://` / `postgresql://` connection string (several
   * workers on several machines), or a SQLite file (default `<dir>/workflow.db`).
   */
  store?: string;
  /** This process's owner id for run leases (default: host, pid, process start time, random). */
  ownerId?: string;
  /** Lease time-to-live without a heartbeat (default 15 s); a crashed owner's runs are taken over after it. */
  leaseTtlMs?: number;
  /** How often the inbox of owned runs is read, and runs owned elsewhere are followed (default 100 ms). */
  pollMs?: number;
  /** `full` (default) fsyncs every commit. */
  durability?: 'full' | 'normal';
  /**
   * Whether a read-only or idempotent tool or agent call may start while the commit that records
   * its request is on its way (default true; its outcome waits for that commit). `false`: every
   * call starts only once its request is durable. See docs/durability.md, "Calls started beside
   * their commit".
   */
  dispatchBeforeCommit?: boolean;
  /** SQLite's page cache in KiB (default 2048; ignored on PostgreSQL). See docs/hosts.md, "Memory of the Node host". */
  sqliteCacheKiB?: number;
  /** Who may do what; consulted at launch and again on every resume. Default: everything. */
  authorities?: AuthorityResolver | Authority;
  log?: HostLog;
  now?: () => number;
  /** What is kept of capability payloads (default: replayable, 16 KiB inline, 16 MiB per artifact). */
  capture?: Partial<CapturePolicy>;
  /**
   * Export spans of the runs this process commits to an OpenTelemetry collector (OTLP/HTTP JSON).
   * Off the commit path: a slow, failing or dead collector never slows or fails a run.
   */
  telemetry?: TelemetryOptions;
  /** How result deliveries are sent: attempts, backoff, timeouts (see `runtime.deliveries`). */
  delivery?: DeliveryOptions;
}

/** The delivery outbox of a runtime's store, and this process's sender of it. */
export interface RuntimeDeliveries {
  /** Sends every delivery due now (claimed with a lease, so other senders never send the same one at once). */
  drain(): Promise<DrainReport>;
  /** Sends in the background until `stop()` or `close()` (`startWorker()` starts it too). */
  start(): void;
  stop(): Promise<void>;
  /** Deliveries, newest first: all, or only `pending` / `delivered` / `dead` ones, or one run's. */
  list(filter?: { state?: DeliveryState; runId?: string; limit?: number }): Promise<DeliveryRecord[]>;
  get(id: string): Promise<DeliveryRecord>;
  /** Makes a dead delivery pending again, due now, with its attempts reset. */
  retry(id: string): Promise<DeliveryRecord>;
}

export interface LaunchOptions {
  input?: unknown;
  runId?: string;
  authority?: Authority;
  timeoutMs?: number;
  correlation?: unknown;
  /**
   * `inline` (default): this process runs it now. `background`: the run is committed to the
   * durable queue (`queued`) and a worker (`agent-workflow serve`, `runtime.startWorker()`) runs it.
   */
  executionMode?: 'inline' | 'background';
  /** Deduplicates launches: a second launch with the same key answers the first run. */
  idempotencyKey?: string;
  /** At most `concurrencyLimit` (default 1) active runs per key; the others wait in FIFO order. Implies `background`. */
  concurrencyKey?: string;
  concurrencyLimit?: number;
  /** Who launched the run, recorded as the origin actor of `run.accepted` (default `sdk`). */
  actor?: 'sdk' | 'cli' | 'mcp' | 'trigger' | 'operator' | 'worker';
  /** Where the launch came from (a channel, a message, a user): recorded as `correlation.origin`. */
  origin?: unknown;
  /**
   * Where the run's results are sent when it ends or waits for an approval: a webhook (signed
   * when `secretRef` names an environment variable holding the secret) or a DingTalk robot.
   * Recorded as `correlation.delivery` and kept with the run; workers (`serve`,
   * `runtime.deliveries`) send it. See docs/triggers.md, "Result delivery".
   */
  delivery?: DeliveryTarget;
  /**
   * The W3C trace context of the launch (`00-<trace id>-<span id>-<flags>`): recorded as
   * `correlation.traceparent`; the run's spans join that trace, and each tool and agent call gets
   * `context.traceparent` in it.
   */
  traceparent?: string;
}

/** What an operator action did: the command, who applied it, and the run's outcome then. */
export interface CommandOutcome extends RunOutcome {
  commandId?: number;
  appliedBy?: string;
}

export interface WorkflowRunHandle {
  runId: string;
  /**
   * Resolves when the run is completed, failed or cancelled. For a run another process carries
   * out (queued for workers, followed), the wait starts when `result` is first read.
   */
  readonly result: Promise<RunOutcome>;
  /** Resolves when the run is terminal or paused (waiting for a person). */
  settled(): Promise<RunOutcome>;
  cancel(reason?: string): Promise<RunOutcome>;
  /** The run's committed events as they become durable (see `WorkflowRuntime.live`). */
  live(options?: LiveOptions): AsyncGenerator<LiveItem, void, undefined>;
}

/** `sha256:` of the JSON text of a node output, to compare two runs' outputs. */
function outputDigest(value: unknown): string {
  return sha256Digest(JSON.stringify(value ?? null));
}

export { WorkflowError };

/** Distinct inline templates whose compiled plans a runtime keeps. */
const planCacheEntriesMax = 256;

function asError(err: unknown): WorkflowError {
  return asHostError(err, WorkflowError);
}

/** Where a runtime's journal lives. */
function openStore(options: RuntimeOptions): Promise<JournalStore & { readonly ownership: RunOwnership }> {
  const location = options.store ?? join(resolvePath(options.dir ?? '.agent-workflow'), 'workflow.db');
  return openJournalStore(location, { ...(options.durability ? { durability: options.durability } : {}), ...(options.sqliteCacheKiB !== undefined ? { sqliteCacheKiB: options.sqliteCacheKiB } : {}), ...(options.now ? { now: options.now } : {}) });
}

export class WorkflowRuntime {
  private constructor(
    readonly kernel: Kernel,
    readonly engine: EngineInstance,
    readonly store: JournalStore & { readonly ownership: RunOwnership },
    private readonly resolveAuthority: AuthorityResolver,
    private readonly disposeScripts: () => void,
    readonly ownerId: string,
    private readonly pollMs: number,
    private readonly liveStreams: LiveStreams,
    private readonly log: HostLog,
    private readonly deliveryOptions: DeliveryOptions,
    private readonly traces: RunTraces,
    private readonly exporter: TraceExporter | undefined,
  ) {}

  static async open(options: RuntimeOptions = {}): Promise<WorkflowRuntime> {
    const log = options.log ?? stderrLog();
    try {
      assertCaptureOptions(options.capture);
      deliveryOptionsOf(options.delivery);
      if (options.dispatchBeforeCommit !== undefined && typeof options.dispatchBeforeCommit !== 'boolean') {
        throw new WorkflowError('host.bad-option', `dispatchBeforeCommit must be true or false, not ${JSON.stringify(options.dispatchBeforeCommit)}`);
      }
      if (options.telemetry) tracesUrlOf(options.telemetry.otlpUrl);
    } catch (err) {
      throw asError(err);
    }
    let kernel: Kernel | undefined;
    let live: LiveStreams | undefined;
    // QuickJS loads with the first run, template or replay that names a script node.
    const scripts = new LazyScriptImports();
    // The engine component compiles on V8's background threads while the store opens on this one
    // (bench/cold/README.md); its failure is awaited below, after the store's.
    const engineReady = EngineInstance.create(nodeComponentLoader(), {
      load: (runId) => kernel!.loadForEngine(runId),
      evaluateScript: scripts.evaluateScript,
      checkScriptSyntax: scripts.checkScriptSyntax,
      scripts,
      sha256Hex,
      log,
    });
    engineReady.catch(() => undefined);
    let store: Awaited<ReturnType<typeof openStore>>;
    try {
      store = await openStore(options);
    } catch (err) {
      await engineReady.catch(() => undefined);
      throw err;
    }
    let exporter: TraceExporter | undefined;
    try {
      const engine = await engineReady;
      const resolveAuthority = authorityResolver(options.authorities);
      const ownerId = options.ownerId ?? newOwnerId();
      const pollMs = options.pollMs ?? leaseDefaults.pollMs;
      const traces = new RunTraces(store);
      kernel = new Kernel({
        store,
        engine,
        gateway: withTraceContext(withLiveProgress(registryGateway(options), () => live), traces),
        log,
        now: options.now,
        authority: resolveAuthority,
        capture: { ...defaultCapture, ...options.capture },
        sha256: sha256Digest,
        leases: { owner: ownerId, ttlMs: options.leaseTtlMs, pollMs },
        ...(options.dispatchBeforeCommit === false ? { dispatchBeforeCommit: false } : {}),
      });
      // On a store that machines share, this process's clock is checked against the store's now
      // and every few seconds (leases are compared across machines' clocks; docs/postgres.md).
      await kernel.leases?.watchClock().catch((err) => log('warn', `checking the clock against the store's failed: ${(err as Error).message}`));
      live = new LiveStreams(store, kernel, pollMs);
      if (options.telemetry) exporter = await TraceExporter.start(store, kernel, options.telemetry);
      const runtime = new WorkflowRuntime(kernel, engine, store, resolveAuthority, () => scripts.dispose(), ownerId, pollMs, live, log, options.delivery ?? {}, traces, exporter);
      runtime.registered = new RegisteredCapabilities(options);
      return runtime;
    } catch (err) {
      await exporter?.close();
      await kernel?.leases?.stop().catch(() => undefined);
      await store.close();
      throw err;
    }
  }

  private get ownership(): RunOwnership {
    return this.store.ownership;
  }

  private sender?: DeliverySender;
  private deliveriesFacade?: RuntimeDeliveries;

  /** The outbox of result deliveries (see docs/triggers.md, "Result delivery"). */
  get deliveries(): RuntimeDeliveries {
    if (this.deliveriesFacade) return this.deliveriesFacade;
    const outbox = this.store.deliveries;
    const need = (): DeliveryOutbox => {
      if (!outbox) throw new WorkflowError('delivery.unsupported', 'this store keeps no delivery outbox');
      return outbox;
    };
    const sender = (): DeliverySender => (this.sender ??= new DeliverySender(need(), this.ownerId, this.deliveryOptions, this.kernel.now, this.log));
    const found = async (id: string) => {
      const d = await need().get(id);
      if (!d) throw new WorkflowError('delivery.not-found', `no delivery ${JSON.stringify(id)} in this store`, { id });
      return d;
    };
    this.deliveriesFacade = {
      drain: () => sender().drain(),
      start: () => sender().start(),
      stop: async () => this.sender?.stop(),
      list: async (filter) => need().list({ ...filter, limit: Math.min(filter?.limit ?? deliveryLimits.listDefault, deliveryLimits.listMax) }),
      get: found,
      retry: async (id) => {
        const before = await found(id);
        if (!(await need().retry(id, this.kernel.now()))) {
          throw new WorkflowError('delivery.not-retryable', `delivery ${id} is ${before.state}${before.lease ? `, held by sender ${before.lease.owner}` : ''}: only a dead delivery (or a pending one no sender holds) is retried`, { id, state: before.state });
        }
        this.sender?.wake();
        return found(id);
      },
    };
    return this.deliveriesFacade;
  }

  private async record(runId: string) {
    const record = await this.store.getRun(runId);
    if (!record) throw asError(runNotFound(runId));
    return record;
  }

  /** Validates a template; one with script nodes loads the script sandbox first. */
  async validate(template: unknown): Promise<ValidationReport> {
    await this.engine.ready();
    return this.engine.withScripts(() => validateTemplate(this.engine, template));
  }

  /** Compiles a template and its `workflow.call` dependencies into a pinned plan. */
  async compile(template: unknown, dependencies: { template: unknown; revision: number }[] = [], revision?: number): Promise<ExecutionPlan> {
    await this.engine.ready();
    return this.engine.withScripts(() => this.compileNow(template, dependencies, revision));
  }

  /** `compile` for a caller that has loaded the script sandbox, or passes the error on to `withScripts`. */
  private compileNow(template: unknown, dependencies: { template: unknown; revision: number }[] = [], revision?: number): ExecutionPlan {
    try {
      return this.engine.compile({ root: { template, ...(revision !== undefined ? { revision } : {}) }, dependencies });
    } catch (err) {
      throw asError(err);
    }
  }

  /**
   * Starts a run. `published` compiles the catalog revision and the closure of the revisions it
   * calls; `inline` compiles the given template (development); both pin the same kind of plan.
   */
  async launch(target: LaunchTarget | Record<string, unknown>, launchOptions: LaunchOptions = {}): Promise<WorkflowRunHandle> {
    const prepared = await this.prepareLaunch(target, launchOptions);
    if (prepared.queued) {
      try {
        const queued = await this.ownership.enqueue(prepared.queued, this.kernel.now());
        this.wakeWorkers();
        return this.handle(queued.runId);
      } catch (err) {
        throw asError(err);
      }
    }
    const { runId, plan, templateKey, authority, options, actor, delivery } = prepared;
    if (options.idempotencyKey !== undefined && (await this.store.getRun(runId))) return this.handle(runId);
    this.traces.remember(runId, options.correlation);
    try {
      // A run id that neither the caller nor an idempotency key named was drawn at random by `prepareLaunch`.
      const fresh = options.runId === undefined && options.idempotencyKey === undefined;
      await this.kernel.launch({ runId, plan, templateKey, input: options.input ?? {}, authority, timeoutMs: options.timeoutMs, correlation: options.correlation, actor, ...(delivery ? { delivery } : {}), ...(fresh ? { fresh } : {}) });
    } catch (err) {
      throw asError(err);
    }
    return this.handle(runId, true);
  }

  /**
   * Checks a launch and pins its plan, run id and authority without starting anything. For a
   * background launch, `queued` is what `enqueue` commits: a trigger commits it together with
   * its ingress record, in one transaction (see `ingress.ts`).
   */
  async prepareLaunch(
    target: LaunchTarget | Record<string, unknown>,
    launchOptions: LaunchOptions = {},
  ): Promise<{ runId: string; plan: ExecutionPlan; templateKey: string; authority: Authority; options: LaunchOptions; actor: NonNullable<LaunchOptions['actor']>; delivery?: { target: DeliveryTarget; digest: string }; queued?: QueuedLaunch }> {
    let options: LaunchOptions;
    let delivery: { target: DeliveryTarget; digest: string } | undefined;
    try {
      assertLaunchOptions(launchOptions);
      options = { ...launchOptions, correlation: launchCorrelation(launchOptions) };
      if (launchOptions.delivery !== undefined) {
        const target = deliveryTargetOf(launchOptions.delivery);
        delivery = { target, digest: deliveryDigest(target) };
      }
    } catch (err) {
      throw asError(err);
    }
    assertRunInput(options.input ?? {});
    await this.engine.ready();
    const t: LaunchTarget = launchTargetOf(target, ['inline', 'plan', 'published'] as const);
    let plan: ExecutionPlan;
    try {
      plan = t.type === 'plan' ? t.plan : t.type === 'published' ? await this.catalog.plan(t.id, t.revision) : await this.engine.withScripts(() => this.inlinePlan(t.template, t.dependencies ?? []));
    } catch (err) {
      throw asError(err);
    }
    const templateKey = templateKeyOf(t, plan);
    let runId: string;
    let authority: Authority;
    try {
      ({ runId, authority } = launchIdentity({
        plan,
        templateKey,
        // An idempotency key names the run: a second launch with it finds the first run.
        runId: options.idempotencyKey !== undefined ? idempotentRunId(options.idempotencyKey) : options.runId,
        ...(options.authority ? { requested: options.authority } : {}),
        resolveAuthority: this.resolveAuthority,
        now: this.kernel.now(),
        randomBytes: pooledRandomBytes,
      }));
    } catch (err) {
      throw asError(err);
    }
    const actor = options.actor ?? 'sdk';
    const prepared = { runId, plan, templateKey, authority, options, actor, ...(delivery ? { delivery } : {}) };
    if (options.executionMode !== 'background' && options.concurrencyKey === undefined) return prepared;
    const queued: QueuedLaunch = {
      runId,
      plan: new TextEncoder().encode(JSON.stringify(plan)),
      templateKey,
      input: options.input ?? {},
      authority,
      actor,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.correlation !== undefined ? { correlation: options.correlation } : {}),
      ...(options.concurrencyKey !== undefined ? { concurrencyKey: options.concurrencyKey, concurrencyLimit: options.concurrencyLimit ?? 1 } : {}),
      ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
      ...(delivery ? { delivery } : {}),
    };
    return { ...prepared, queued };
  }

  /** Wakes this process's workers: something was queued (by `launch`, or a trigger's own commit). */
  wakeWorkers(): void {
    for (const w of this.workers) w.wake();
  }

  /** Compiled plans of inline launches by the digest of what they were compiled from (LRU). */
  private readonly plans = new Map<string, ExecutionPlan>();
  private engineDefinitionsHash: string | undefined;

  /**
   * The pinned plan of an inline template and its dependencies: compiled once per distinct
   * content (and node-definition set), then served from the cache.
   */
  private inlinePlan(template: unknown, dependencies: { template: unknown; revision: number }[]): ExecutionPlan {
    this.engineDefinitionsHash ??= this.engine.describe().nodeDefinitionSetHash as string;
    let text: string;
    try {
      text = JSON.stringify([template, dependencies, this.nodeDefinitions.setHash(this.engineDefinitionsHash)]);
    } catch {
      // Too deep (or not JSON) to digest: compile refuses it with its own error.
      return this.nodeDefinitions.pin(this.compileNow(template, dependencies));
    }
    const key = createHash('sha256').update(text).digest('hex');
    const cached = this.plans.get(key);
    if (cached) {
      this.plans.delete(key);
      this.plans.set(key, cached);
      return cached;
    }
    const plan = this.nodeDefinitions.pin(this.compileNow(template, dependencies));
    if (this.plans.size >= planCacheEntriesMax) this.plans.delete(this.plans.keys().next().value as string);
    this.plans.set(key, plan);
    return plan;
  }

  /** Workers started in this process: woken when this process queues work. */
  private readonly workers = new Set<import('./worker.js').Worker>();

  /** Workers alive on this store (heartbeat within the last three lease lifetimes). */
  async liveWorkers() {
    return this.ownership.liveWorkers(this.kernel.now(), 3 * (this.kernel.leases?.ttlMs ?? leaseDefaults.ttlMs));
  }

  /** @internal A worker of this runtime has stopped: it is no longer woken nor stopped by `close`. */
  workerStopped(worker: import('./worker.js').Worker): void {
    this.workers.delete(worker);
  }

  /** A worker in this process: claims queued runs and runs whose owner is gone (see worker.ts). */
  async startWorker(options: import('./worker.js').WorkerOptions = {}) {
    const { Worker } = await import('./worker.js');
    const worker = new Worker(this, options);
    worker.start();
    this.workers.add(worker);
    return worker;
  }

  private catalogInstance?: WorkflowCatalog;

  /** Custom node definitions of this host, folded into the plans it compiles. */
  readonly nodeDefinitions = new NodeDefinitionRegistry();

  /** Drafts and published revisions, in the same database as the journal (SQLite or PostgreSQL). */
  get catalog(): WorkflowCatalog {
    this.catalogInstance ??= new WorkflowCatalog(this.store instanceof SqliteJournalStore ? new SqliteCatalogStorage(this.store.db) : (this.store as unknown as { catalogStorage(): CatalogStorage }).catalogStorage(), {
      engine: { validate: (t) => this.validate(t), compile: (t, deps, revision) => this.compile(t, deps, revision) },
      nodeDefinitions: this.nodeDefinitions,
      now: this.kernel.now,
    });
    return this.catalogInstance;
  }

  private triggerStorageInstance?: TriggerStorage;
  private bindingsInstance?: BindingCatalog;

  /** Bindings and the ingress journal, in the journal's database (SQLite or PostgreSQL). */
  get triggerStorage(): TriggerStorage {
    this.triggerStorageInstance ??= this.store instanceof SqliteJournalStore ? new SqliteTriggerStorage(this.store.db, this.store.ownership) : (this.store as unknown as { triggerStorage(): TriggerStorage }).triggerStorage();
    return this.triggerStorageInstance;
  }

  /** Workflow bindings: what connects a webhook, a DingTalk robot or a cron schedule to a published revision. */
  get bindings(): BindingCatalog {
    this.bindingsInstance ??= new BindingCatalog(this.triggerStorage, this.catalog, this.kernel.now);
    return this.bindingsInstance;
  }

  private registered = new RegisteredCapabilities({});

  /**
   * The tools, agents and models a run may use under an authority (its scopes intersected with
   * what this host registered), for agents and consoles to show; see docs/engine.md.
   */
  capabilities(authority: Authority): ListedCapability[] {
    return this.registered.list(authority);
  }

  /** The node-definition-set hash a plan compiled now would pin (engine + host definitions). */
  nodeDefinitionSetHash(): string {
    return this.nodeDefinitions.setHash(this.engine.describe().nodeDefinitionSetHash as string);
  }

  /** Whether this engine and host can continue a stored run as pinned; never guesses. */
  async checkRun(runId: string): Promise<RunCompatibility> {
    const tail = await this.store.load(runId);
    if (!tail) throw asError(runNotFound(runId));
    const d = this.engine.describe() as { flags: string[]; checkpointSchemaVersion: number };
    const plan = planOfTail(tail);
    const checkpoint = tail.checkpoint ? (JSON.parse(new TextDecoder().decode(tail.checkpoint)) as { checkpointVersion?: unknown }) : undefined;
    return runCompatibility(runId, plan, checkpoint, { flags: d.flags, checkpointSchemaVersion: d.checkpointSchemaVersion, nodeDefinitionSetHash: this.nodeDefinitionSetHash() });
  }

  /** Throws `RunNeedsAttentionError` (code `run.needs-attention`, with the run id) when `checkRun` refuses. */
  async assertRunnable(runId: string): Promise<void> {
    const report = await this.checkRun(runId);
    if (!report.ok) throw new RunNeedsAttentionError(runId, report.problems.filter((p) => p.severity === 'needs_attention'));
  }

  /**
   * A handle on a run. `carriedOutHere`: this process is carrying the run out, so its `result`
   * waits from now on (a commit of it that this process loses fails the wait). Otherwise `result`
   * waits only once asked for: the wait follows the run through the store, one read per poll
   * interval, and a process that queues thousands of runs for workers must not poll for each.
   */
  private handle(runId: string, carriedOutHere = false): WorkflowRunHandle {
    const kernel = this.kernel;
    let result: Promise<RunOutcome> | undefined;
    const wait = () => {
      if (!result) {
        result = kernel.waitFor(runId, false);
        // A caller that only awaits `settled()` must not see `result`'s failure as unhandled.
        result.catch(() => undefined);
      }
      return result;
    };
    if (carriedOutHere) wait();
    return {
      runId,
      get result() {
        return wait();
      },
      settled: () => this.kernel.waitFor(runId, true),
      cancel: (reason?: string) => this.cancel(runId, { reason }),
      live: (options?: LiveOptions) => this.live(runId, options),
    };
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
      yield* this.liveStreams.subscribe(runId, options);
    } catch (err) {
      throw asError(err);
    }
  }

  async getRun(runId: string): Promise<RunView> {
    const record = await this.record(runId);
    return runView(record, await this.kernel.outcomeFromStore(runId));
  }

  async listRuns(filter?: { statuses?: string[]; limit?: number }) {
    return this.store.listRuns(filter);
  }

  /** A page of events, ascending by seq. */
  async readEvents(runId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<{ events: any[]; lastSeq: number; more: boolean }> {
    await this.record(runId);
    const page = await this.store.readEvents(runId, options.afterSeq ?? 0, Math.min(options.limit ?? 500, 10_000));
    return { events: page.events.map((e) => JSON.parse(e)), lastSeq: page.lastSeq, more: page.more };
  }

  /**
   * Commits an operator command to the run's inbox, then sees it applied: by this process when it
   * owns the run or can take its lease (nobody else owns it), else by the live owner. Resolves
   * once it is applied; a command the engine refuses rejects with the engine's error.
   */
  async command(runId: string, command: OperatorCommand, options: { timeoutMs?: number } = {}): Promise<CommandOutcome> {
    const id = await this.post(runId, command);
    const leases = this.kernel.leases!;
    // Set when the run was found terminal (`run <id> is <status>`): the commit that ended it either
    // applied this command (its owner marks the command applied in that same transaction) or never will.
    let ended: string | undefined;
    // With workers on the store, a run nobody owns is theirs to take: this process only follows.
    const applyHere = async () => {
      if (leases.held(runId)) return true;
      if ((await this.liveWorkers()).length > 0) {
        const record = await this.store.getRun(runId);
        if (record && isTerminal(record)) ended = `run ${runId} is ${record.status}`;
        return false;
      }
      const grant = await this.kernel.takeLease(runId);
      if (grant.ok) return true;
      if (grant.code === 'run.terminal') ended = grant.message;
      else if (grant.code === 'lease.clock-skew') throw new WorkflowError(grant.code, `${grant.message}. Command ${id} (${command.type}) is committed to run ${runId}'s inbox: its owner, or a worker, applies it`, { commandId: id });
      else if (grant.code !== 'lease.held') throw new WorkflowError(grant.code, grant.message);
      return false;
    };
    if (await applyHere()) void leases.poll();
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const result = ended !== undefined ? await this.settleEnded(id, ended) : await this.ownership.commandResult(id);
      if (result?.state === 'applied') return { ...(await this.kernel.outcomeFromStore(runId)), commandId: id, ...(result.appliedBy ? { appliedBy: result.appliedBy } : {}) };
      if (result?.state === 'refused') throw new WorkflowError(result.error?.code ?? 'command.refused', result.error?.message ?? 'the command was refused', { commandId: id });
      if (ended !== undefined) throw new WorkflowError('run.terminal', endedBeforeApplied(ended, id), { commandId: id });
      if (Date.now() >= deadline) {
        const record = await this.store.getRun(runId);
        throw new WorkflowError(
          'command.pending',
          `command ${id} (${command.type}) is committed to run ${runId}'s inbox but was not applied within ${options.timeoutMs ?? 30_000} ms; ${record?.lease?.owner ? `its owner ${record.lease.owner} applies it when it reads its inbox` : 'a worker or the next command applies it'}`,
          { commandId: id },
        );
      }
      // The lease may have been given up meanwhile: then this process (or a worker) applies it.
      if (await applyHere()) void leases.poll();
      if (!ended) await new Promise((r) => setTimeout(r, this.pollMs));
    }
  }

  /**
   * Commits a command to a run's inbox and returns its id, without applying it: the run's owner,
   * or a worker when the run has none, applies it (`commandResult` tells when).
   */
  async post(runId: string, command: OperatorCommand): Promise<number> {
    let id: number;
    try {
      id = await this.ownership.postCommand(runId, command, this.kernel.now());
    } catch (err) {
      throw asError(err);
    }
    for (const w of this.workers) w.wake();
    return id;
  }

  /**
   * Where a posted command stands: pending, applied (by whom), or refused (with the error). A
   * command posted to a run that had ended is stored refused (`run.terminal`); one still pending
   * when its run ended is refused by the first reader that sees the run ended (`settleEnded`).
   */
  async commandResult(commandId: number): Promise<CommandResult | undefined> {
    const result = await this.ownership.commandResult(commandId);
    if (result?.state !== 'pending') return result;
    const record = await this.store.getRun(result.runId);
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
    const result = await this.ownership.commandResult(id);
    if (result?.state !== 'pending') return result;
    await this.ownership.refuseCommands([{ id, error: { code: 'run.terminal', message: endedBeforeApplied(ended, id) } }], this.ownerId, this.kernel.now());
    return this.ownership.commandResult(id);
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
    return this.handle(runId);
  }

  async cancel(runId: string, options: { reason?: string; by?: string } = {}): Promise<CommandOutcome> {
    const record = await this.record(runId);
    const reason = options.reason ?? 'cancelled';
    const by = options.by ?? 'sdk';
    if (isTerminal(record)) return this.kernel.outcomeFromStore(runId);
    if (record.status === 'queued' && (await this.ownership.cancelQueued(runId, reason, by, this.kernel.now()))) return this.kernel.outcomeFromStore(runId);
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
  async resolve(runId: string, nodeId: string, resolution: { succeeded?: unknown; retry?: boolean; fail?: string; by: string; item?: number }): Promise<CommandOutcome> {
    await this.record(runId);
    return this.command(runId, { type: 'resolve', nodeId, ...resolutionFields(resolution) });
  }

  /** A self-contained export of a run: events, pinned plan, captured artifacts. */
  async exportRun(runId: string): Promise<RunExport> {
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
    this.traces.remember(runId, correlation);
  }

  /** The pinned plan of a stored run. */
  async planOfRun(runId: string): Promise<ExecutionPlan> {
    const tail = await this.store.load(runId);
    if (tail) return planOfTail(tail);
    const queued = await this.ownership.queuedLaunch(runId);
    if (queued) return JSON.parse(new TextDecoder().decode(queued.plan)) as ExecutionPlan;
    throw asError(runNotFound(runId));
  }

  /** The authority a run gets now (resolved again at every resume and takeover). */
  authorityOf(runId: string, plan: ExecutionPlan, requested?: Authority): Authority {
    return this.resolveAuthority({ runId, workflowId: workflowIdOf(plan), ...(requested ? { requested } : {}) });
  }

  /** Replays a stored run: `inspect` folds the journal; `recorded` re-runs it with no gateway. */
  async replay(runId: string, options: { mode: 'inspect' | 'recorded'; editedTemplate?: unknown } = { mode: 'inspect' }): Promise<Record<string, unknown>> {
    let source: ReplaySource;
    try {
      source = await replaySourceFromStore(this.store, runId);
    } catch (err) {
      throw asError(err);
    }
    const editedPlan = options.editedTemplate !== undefined ? await this.editedPlan(source.plan, options.editedTemplate) : undefined;
    try {
      return await this.engine.withScripts(() => this.engine.replay(replayRequestOf(source, options.mode, editedPlan)));
    } catch (err) {
      throw asError(err);
    }
  }

  /**
   * `live` replay: a new run of the same pinned plan and input that calls the gateways again,
   * linked to the source run, and a comparison of every node's output by digest.
   */
  async replayLive(sourceRunId: string, options: { by?: string } = {}): Promise<Record<string, unknown>> {
    const source = await this.exportRun(sourceRunId);
    const accepted = source.events[0];
    if (accepted.payload.capture === 'metadata') throw new WorkflowError('replay.payloads-not-kept', `run ${sourceRunId} was recorded with capture mode metadata: its journal has no input to run again`, { runId: sourceRunId });
    const templateKey = accepted.payload.templateKey as string;
    const handle = await this.launch({ type: 'plan', plan: source.plan, templateKey }, { input: accepted.payload.input, actor: 'operator', correlation: { liveReplayOf: sourceRunId, by: options.by ?? 'sdk' } });
    const outcome = await handle.settled();
    const outputs = (events: any[]) => {
      const out = new Map<string, string>();
      for (const e of events) if (e.type === 'node.output-committed') out.set(e.node.id, outputDigest(e.payload.output));
      return out;
    };
    const recorded = outputs(source.events);
    const live = outputs((await this.exportRun(handle.runId)).events);
    const differences = [...new Set([...recorded.keys(), ...live.keys()])]
      .filter((id) => recorded.get(id) !== live.get(id))
      .map((nodeId) => ({ nodeId, recordedDigest: recorded.get(nodeId) ?? null, liveDigest: live.get(nodeId) ?? null }));
    return {
      mode: 'live',
      sourceRunId,
      runId: handle.runId,
      identical: differences.length === 0 && outcome.status === source.run.status,
      recordedOutcome: { status: source.run.status },
      liveOutcome: outcome,
      differences,
    };
  }

  /** What the OpenTelemetry exporter did (`undefined` when the runtime does not export). */
  telemetryStats(): TelemetryStats | undefined {
    return this.exporter?.stats();
  }

  async close(): Promise<void> {
    // Workers still running stop claiming first (their calls in flight are handed back below,
    // as every call of a closing runtime is): a claim loop left running kept the store open.
    for (const w of [...this.workers]) await w.stop({ drainMs: 0 });
    await this.sender?.stop();
    this.liveStreams.close();
    await this.kernel.close({ abortInflight: true });
    await this.exporter?.close();
    await this.store.close();
    this.disposeScripts();
  }
}

/** Why a command still pending on an ended run is refused (`ended`: "run <id> is <status>"). */
function endedBeforeApplied(ended: string, commandId: number): string {
  return `${ended}; it ended before command ${commandId} was applied`;
}

/** The run id an idempotency key names: `k-` and 32 hex digits of its SHA-256. */
export function idempotentRunId(key: string): string {
  return `k-${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

export { KernelError };

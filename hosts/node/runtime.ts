// The embedded SDK: `WorkflowRuntime` validates, launches, inspects, resumes and cancels runs of
// the engine component, journaling to SQLite.
import { createHash, randomBytes } from 'node:crypto';
import { join, resolve as resolvePath } from 'node:path';
import { EngineInstance } from '../core/engine-instance.js';
import { newRunId } from '../core/ids.js';
import { assertRunInput, assertTemplateJson } from '../core/json-input.js';
import { approvalFact, pendingInvocation } from '../core/operator.js';
import { defaultCapture, Kernel, KernelError, type CapturePolicy, type RunOutcome } from '../core/kernel.js';
import { assertPortableId } from '../core/store.js';
import { terminalStatuses, type Authority, type ExecutionPlan, type HostLog, type ValidationReport } from '../core/types.js';
import { nodeComponentLoader } from './component.js';
import { artifactTexts, exportFormat, type RunExport } from '../core/export-format.js';
import { registryGateway, type GatewayRegistry } from './gateway.js';
import { SqliteJournalStore } from './journal.js';
import { NodeDefinitionRegistry, RunNeedsAttentionError, runCompatibility, WorkflowCatalog, type RunCompatibility } from './catalog.js';
import { stderrLog } from './log.js';
import { createScriptImports } from './sandbox.js';

export type AuthorityResolver = (context: { runId: string; workflowId: string; requested?: Authority }) => Authority;

export interface RuntimeOptions extends GatewayRegistry {
  /** State directory; default `./.agent-workflow`. */
  dir?: string;
  /** `full` (default) fsyncs every commit. */
  durability?: 'full' | 'normal';
  /** Who may do what; consulted at launch and again on every resume. Default: everything. */
  authorities?: AuthorityResolver | Authority;
  log?: HostLog;
  now?: () => number;
  /** What is kept of capability payloads (default: replayable, 16 KiB inline, 16 MiB per artifact). */
  capture?: Partial<CapturePolicy>;
}

export type LaunchTarget =
  | { type: 'inline'; template: unknown; dependencies?: { template: unknown; revision: number }[] }
  | { type: 'plan'; plan: ExecutionPlan; templateKey?: string }
  | { type: 'published'; id: string; revision: number };

export interface LaunchOptions {
  input?: unknown;
  runId?: string;
  authority?: Authority;
  timeoutMs?: number;
  correlation?: unknown;
  /** Who launched the run, recorded as the origin actor of `run.accepted` (default `sdk`). */
  actor?: 'sdk' | 'cli' | 'mcp' | 'trigger' | 'operator';
}

export interface WorkflowRunHandle {
  runId: string;
  /** Resolves when the run is completed, failed or cancelled. */
  result: Promise<RunOutcome>;
  /** Resolves when the run is terminal or paused (waiting for a person). */
  settled(): Promise<RunOutcome>;
  cancel(reason?: string): Promise<RunOutcome>;
}

function digestOf(value: unknown): string {
  return `sha256:${createHash('sha256').update(JSON.stringify(value ?? null)).digest('hex')}`;
}

export class WorkflowError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly detail?: unknown,
  ) {
    super(message);
    this.name = 'WorkflowError';
  }
}

const allowEverything: Authority = { id: 'local', scopes: ['*'] };

function asError(err: unknown): WorkflowError {
  if (err instanceof WorkflowError) return err;
  const e = err as { code?: string; message?: string; detail?: unknown };
  return new WorkflowError(e.code ?? 'host.error', e.message ?? String(err), e.detail);
}

export class WorkflowRuntime {
  private constructor(
    readonly kernel: Kernel,
    readonly engine: EngineInstance,
    readonly store: SqliteJournalStore,
    private readonly resolveAuthority: AuthorityResolver,
    private readonly disposeScripts: () => void,
  ) {}

  static async open(options: RuntimeOptions = {}): Promise<WorkflowRuntime> {
    const dir = resolvePath(options.dir ?? '.agent-workflow');
    const log = options.log ?? stderrLog();
    const store = SqliteJournalStore.open(join(dir, 'workflow.db'), { durability: options.durability, now: options.now });
    try {
      const scripts = await createScriptImports();
      const engine = await EngineInstance.create(nodeComponentLoader(), { load: (runId) => store.load(runId), ...scripts, log });
      const a = options.authorities;
      const resolveAuthority: AuthorityResolver = typeof a === 'function' ? a : () => a ?? allowEverything;
      const kernel = new Kernel({
        store,
        engine,
        gateway: registryGateway(options),
        log,
        now: options.now,
        authority: resolveAuthority,
        capture: { ...defaultCapture, ...options.capture },
        sha256: (bytes) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
      });
      return new WorkflowRuntime(kernel, engine, store, resolveAuthority, () => scripts.evaluator.dispose());
    } catch (err) {
      store.close();
      throw err;
    }
  }

  validate(template: unknown): ValidationReport {
    assertTemplateJson(template);
    return this.engine.validate(typeof template === 'string' ? template : JSON.stringify(template));
  }

  /** Compiles a template and its `workflow.call` dependencies into a pinned plan. */
  compile(template: unknown, dependencies: { template: unknown; revision: number }[] = [], revision?: number): ExecutionPlan {
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
  async launch(target: LaunchTarget | Record<string, unknown>, options: LaunchOptions = {}): Promise<WorkflowRunHandle> {
    assertRunInput(options.input ?? {});
    await this.engine.ready();
    const kind = (target as { type?: string }).type;
    const t = kind === 'inline' || kind === 'plan' || kind === 'published' ? (target as LaunchTarget) : ({ type: 'inline', template: target } as LaunchTarget);
    let plan: ExecutionPlan;
    try {
      plan = t.type === 'plan' ? t.plan : t.type === 'published' ? this.catalog.plan(t.id, t.revision) : this.nodeDefinitions.pin(this.compile(t.template, t.dependencies ?? []));
    } catch (err) {
      throw asError(err);
    }
    const templateKey = t.type === 'plan' ? (t.templateKey ?? plan.root) : plan.root;
    const runId = options.runId ?? newRunId(this.kernel.now(), (n) => randomBytes(n));
    try {
      assertPortableId(runId, 'run id');
    } catch (err) {
      throw asError(err);
    }
    const workflowId = plan.templates[templateKey].template.metadata.id as string;
    const authority = this.resolveAuthority({ runId, workflowId, ...(options.authority ? { requested: options.authority } : {}) });
    try {
      await this.kernel.launch({ runId, plan, templateKey, input: options.input ?? {}, authority, timeoutMs: options.timeoutMs, correlation: options.correlation, actor: options.actor ?? 'sdk' });
    } catch (err) {
      throw asError(err);
    }
    return this.handle(runId);
  }

  private catalogInstance?: WorkflowCatalog;

  /** Custom node definitions of this host, folded into the plans it compiles. */
  readonly nodeDefinitions = new NodeDefinitionRegistry();

  /** Drafts and published revisions, in the same database as the journal. */
  get catalog(): WorkflowCatalog {
    this.catalogInstance ??= new WorkflowCatalog(this.store.db, {
      engine: { validate: (t) => this.validate(t), compile: (t, deps, revision) => this.compile(t, deps, revision) },
      nodeDefinitions: this.nodeDefinitions,
      now: this.kernel.now,
    });
    return this.catalogInstance;
  }

  /** The node-definition-set hash a plan compiled now would pin (engine + host definitions). */
  nodeDefinitionSetHash(): string {
    return this.nodeDefinitions.setHash(this.engine.describe().nodeDefinitionSetHash as string);
  }

  /** Whether this engine and host can continue a stored run as pinned; never guesses. */
  checkRun(runId: string): RunCompatibility {
    const tail = this.store.load(runId);
    if (!tail) throw new WorkflowError('run.not-found', `run ${runId} does not exist in this store`);
    const d = this.engine.describe() as { flags: string[]; checkpointSchemaVersion: number };
    const plan = JSON.parse(new TextDecoder().decode(tail.plan)) as ExecutionPlan;
    const checkpoint = tail.checkpoint ? (JSON.parse(new TextDecoder().decode(tail.checkpoint)) as { checkpointVersion?: unknown }) : undefined;
    return runCompatibility(runId, plan, checkpoint, { flags: d.flags, checkpointSchemaVersion: d.checkpointSchemaVersion, nodeDefinitionSetHash: this.nodeDefinitionSetHash() });
  }

  /** Throws `RunNeedsAttentionError` (code `run.needs-attention`, with the run id) when `checkRun` refuses. */
  assertRunnable(runId: string): void {
    const report = this.checkRun(runId);
    if (!report.ok) throw new RunNeedsAttentionError(runId, report.problems.filter((p) => p.severity === 'needs_attention'));
  }

  private handle(runId: string): WorkflowRunHandle {
    return {
      runId,
      result: this.kernel.waitFor(runId, false),
      settled: () => this.kernel.waitFor(runId, true),
      cancel: (reason?: string) => this.cancel(runId, { reason }),
    };
  }

  getRun(runId: string): RunOutcome & { lastSeq: number; createdAt: number; updatedAt: number } {
    const record = this.store.getRun(runId);
    if (!record) throw new WorkflowError('run.not-found', `run ${runId} does not exist in this store`);
    return { ...this.kernel.outcomeFromStore(runId), lastSeq: record.lastSeq, createdAt: record.createdAt, updatedAt: record.updatedAt };
  }

  listRuns(filter?: { statuses?: string[]; limit?: number }) {
    return this.store.listRuns(filter);
  }

  /** A page of events, ascending by seq. */
  readEvents(runId: string, options: { afterSeq?: number; limit?: number } = {}): { events: any[]; lastSeq: number; more: boolean } {
    if (!this.store.getRun(runId)) throw new WorkflowError('run.not-found', `run ${runId} does not exist in this store`);
    const page = this.store.readEvents(runId, options.afterSeq ?? 0, Math.min(options.limit ?? 500, 10_000));
    return { events: page.events.map((e) => JSON.parse(e)), lastSeq: page.lastSeq, more: page.more };
  }

  /**
   * Resumes a run (also one left by another process). The authority is resolved again. A
   * terminal run is not started again: its handle resolves with the recorded result.
   */
  async resume(runId: string, options: { by?: string } = {}): Promise<WorkflowRunHandle> {
    const record = this.store.getRun(runId);
    if (!record) throw new WorkflowError('run.not-found', `run ${runId} does not exist in this store`);
    if (terminalStatuses.has(record.status)) return this.handle(runId);
    this.assertRunnable(runId);
    const plan = JSON.parse(new TextDecoder().decode(this.store.load(runId)!.plan)) as ExecutionPlan;
    const authority = this.resolveAuthority({ runId, workflowId: plan.templates[plan.root].template.metadata.id });
    try {
      await this.kernel.resume(runId, options.by ?? 'sdk', authority);
    } catch (err) {
      throw asError(err);
    }
    return this.handle(runId);
  }

  async cancel(runId: string, options: { reason?: string; by?: string } = {}): Promise<RunOutcome> {
    const record = this.store.getRun(runId);
    if (!record) throw new WorkflowError('run.not-found', `run ${runId} does not exist in this store`);
    if (!terminalStatuses.has(record.status)) {
      await this.kernel.deliver(runId, { type: 'cancel-requested', reason: options.reason ?? 'cancelled', by: options.by ?? 'sdk' }, options.by ?? 'sdk').catch((err) => {
        throw asError(err);
      });
    }
    return this.kernel.outcomeFromStore(runId);
  }

  async approve(runId: string, nodeId: string, options: { by: string; comment?: string; approved?: boolean }): Promise<RunOutcome> {
    const record = this.store.getRun(runId);
    if (!record) throw new WorkflowError('run.not-found', `run ${runId} does not exist in this store`);
    if (terminalStatuses.has(record.status)) throw new WorkflowError('run.terminal', `run ${runId} is ${record.status}; there is nothing to approve`);
    let invocationId: string;
    try {
      invocationId = pendingInvocation(this.store, runId, nodeId, ['approval']);
    } catch (err) {
      throw asError(err);
    }
    await this.kernel.deliver(runId, approvalFact(invocationId, { approved: options.approved !== false, by: options.by, comment: options.comment }), `operator:${options.by}`).catch((err) => {
      throw asError(err);
    });
    return this.kernel.outcomeFromStore(runId);
  }

  reject(runId: string, nodeId: string, options: { by: string; comment?: string }): Promise<RunOutcome> {
    return this.approve(runId, nodeId, { ...options, approved: false });
  }

  /** Settles a node whose outcome is unknown (`needs_attention`); recorded with who did it. */
  async resolve(runId: string, nodeId: string, resolution: { succeeded?: unknown; retry?: boolean; fail?: string; by: string; item?: number }): Promise<RunOutcome> {
    const kind = resolution.retry ? 'retry' : resolution.fail !== undefined ? 'fail' : 'succeeded';
    await this.kernel
      .deliver(runId, { type: 'outcome-resolved', nodeId, resolution: kind, by: resolution.by, ...(resolution.item !== undefined ? { item: resolution.item } : {}), ...(kind === 'succeeded' ? { output: resolution.succeeded ?? null } : {}), ...(kind === 'fail' ? { reason: resolution.fail } : {}) }, `operator:${resolution.by}`)
      .catch((err) => {
        throw asError(err);
      });
    return this.kernel.outcomeFromStore(runId);
  }

  /** A self-contained export of a run: events, pinned plan, captured artifacts. */
  exportRun(runId: string): RunExport {
    const record = this.store.getRun(runId);
    const tail = this.store.load(runId);
    if (!record || !tail) throw new WorkflowError('run.not-found', `run ${runId} does not exist in this store`);
    const plan = JSON.parse(new TextDecoder().decode(tail.plan)) as ExecutionPlan;
    const events: any[] = [];
    for (let after = 0; ; ) {
      const page = this.store.readEvents(runId, after, 5_000);
      for (const e of page.events) events.push(JSON.parse(e));
      after = page.lastSeq;
      if (!page.more) break;
    }
    const artifacts: RunExport['artifacts'] = {};
    for (const e of events) {
      const ref = e.payload?.artifact as { digest: string; redacted?: boolean } | undefined;
      if (!ref || ref.redacted || artifacts[ref.digest]) continue;
      const stored = this.store.getArtifact(ref.digest);
      if (stored) artifacts[ref.digest] = { mediaType: stored.mediaType, base64: Buffer.from(stored.bytes).toString('base64') };
    }
    return { format: exportFormat, run: { runId, status: record.status, lastSeq: record.lastSeq }, plan, events, artifacts };
  }

  /** Compiles an edited version of a run's root template against the run's pinned dependencies. */
  editedPlan(plan: ExecutionPlan, editedTemplate: unknown): ExecutionPlan {
    const deps = Object.entries(plan.templates)
      .filter(([key, t]) => key !== plan.root && t.revision !== undefined)
      .map(([, t]) => ({ template: t.template, revision: t.revision! }));
    return this.compile(editedTemplate, deps);
  }

  /**
   * Resumes every run that is not terminal (a worker starting after a crash). Calls that were in
   * flight in the process that died are reissued when safe, or surfaced as needs_attention.
   */
  async recoverPending(options: { by?: string; limit?: number } = {}): Promise<{ runId: string; status?: string; error?: string }[]> {
    const runs = this.store.listRuns({ statuses: ['queued', 'running', 'paused'], limit: options.limit ?? 10_000 });
    const out: { runId: string; status?: string; error?: string }[] = [];
    for (const run of runs) {
      try {
        await this.resume(run.runId, { by: options.by ?? 'recovery' });
        out.push({ runId: run.runId, status: this.store.getRun(run.runId)?.status });
      } catch (err) {
        out.push({ runId: run.runId, error: `${(err as { code?: string }).code ?? 'error'}: ${(err as Error).message}` });
      }
    }
    return out;
  }

  /** Replays a stored run: `inspect` folds the journal; `recorded` re-runs it with no gateway. */
  replay(runId: string, options: { mode: 'inspect' | 'recorded'; editedTemplate?: unknown } = { mode: 'inspect' }): Record<string, unknown> {
    const exported = this.exportRun(runId);
    const editedPlan = options.editedTemplate !== undefined ? this.editedPlan(exported.plan, options.editedTemplate) : undefined;
    try {
      return this.engine.replay({ mode: options.mode, plan: exported.plan, ...(editedPlan ? { editedPlan } : {}), events: exported.events, artifacts: artifactTexts(exported) });
    } catch (err) {
      throw asError(err);
    }
  }

  /**
   * `live` replay: a new run of the same pinned plan and input that calls the gateways again,
   * linked to the source run, and a comparison of every node's output by digest.
   */
  async replayLive(sourceRunId: string, options: { by?: string } = {}): Promise<Record<string, unknown>> {
    const source = this.exportRun(sourceRunId);
    const accepted = source.events[0];
    const templateKey = accepted.payload.templateKey as string;
    const handle = await this.launch({ type: 'plan', plan: source.plan, templateKey }, { input: accepted.payload.input, correlation: { liveReplayOf: sourceRunId, by: options.by ?? 'sdk' } });
    const outcome = await handle.settled();
    const outputs = (events: any[]) => {
      const out = new Map<string, string>();
      for (const e of events) if (e.type === 'node.output-committed') out.set(e.node.id, digestOf(e.payload.output));
      return out;
    };
    const recorded = outputs(source.events);
    const live = outputs(this.exportRun(handle.runId).events);
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

  async close(): Promise<void> {
    await this.kernel.close({ abortInflight: true });
    this.store.close();
    this.disposeScripts();
  }
}

export { KernelError };

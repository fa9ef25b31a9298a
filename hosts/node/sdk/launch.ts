// What a launch pins before anything starts: its checked options, its plan (compiled once per
// distinct inline template, or a published revision's), its run id and its authority. A
// background launch also gets the `QueuedLaunch` that `enqueue` commits.
import { createHash } from 'node:crypto';
import { keyedRunId } from '../../core/ids.js';
import { sha256Hex } from '../../shared/digest.js';
import { launchIdentity, launchTargetOf, templateKeyOf, type AuthorityResolver, type LaunchTarget } from '../../core/host-runtime.js';
import { assertRunInput } from '../../core/json-input.js';
import type { EngineInstance } from '../../core/engine-instance.js';
import type { QueuedLaunch } from '../../core/ownership-store.js';
import type { Authority, ExecutionPlan } from '../../core/types.js';
import type { NodeDefinitionRegistry, WorkflowCatalog } from '../catalog/catalog.js';
import { deliveryDigest, deliveryTargetOf, type DeliveryTarget } from '../delivery/target.js';
import { asError } from './errors.js';
import { assertLaunchOptions, launchCorrelation } from './launch-options.js';
import { pooledRandomBytes } from './random-pool.js';
import type { LaunchOptions } from './runtime-types.js';

/** Distinct inline templates whose compiled plans a runtime keeps. */
const planCacheEntriesMax = 256;

/** A launch checked and pinned (see `LaunchPlanner.prepareLaunch`). */
export interface PreparedLaunch {
  runId: string;
  plan: ExecutionPlan;
  templateKey: string;
  authority: Authority;
  options: LaunchOptions;
  actor: NonNullable<LaunchOptions['actor']>;
  delivery?: { target: DeliveryTarget; digest: string };
  queued?: QueuedLaunch;
}

/** What planning a launch reads: the engine, the catalog, the host's node definitions, authority and clock. */
export interface LaunchPlannerHost {
  readonly engine: EngineInstance;
  catalog(): WorkflowCatalog;
  readonly nodeDefinitions: NodeDefinitionRegistry;
  readonly resolveAuthority: AuthorityResolver;
  now(): number;
}

export class LaunchPlanner {
  constructor(private readonly host: LaunchPlannerHost) {}

  compileNow(template: unknown, dependencies: { template: unknown; revision: number }[] = [], revision?: number): ExecutionPlan {
    try {
      const nodeDefinitions = this.host.nodeDefinitions.size > 0 ? { nodeDefinitions: this.host.nodeDefinitions.requestDefinitions() } : {};
      return this.host.engine.compile({ root: { template, ...(revision !== undefined ? { revision } : {}) }, dependencies, ...nodeDefinitions });
    } catch (err) {
      throw asError(err);
    }
  }

  /**
   * Checks a launch and pins its plan, run id and authority without starting anything. For a
   * background launch, `queued` is what `enqueue` commits: a trigger commits it together with
   * its ingress record, in one transaction (see `ingress.ts`).
   */
  async prepareLaunch(
    target: LaunchTarget | Record<string, unknown>,
    launchOptions: LaunchOptions = {},
  ): Promise<PreparedLaunch> {
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
    await this.host.engine.ready();
    const t: LaunchTarget = launchTargetOf(target, ['inline', 'plan', 'published'] as const);
    let plan: ExecutionPlan;
    try {
      plan = t.type === 'plan' ? t.plan : t.type === 'published' ? await this.host.catalog().plan(t.id, t.revision) : await this.host.engine.withScripts(() => this.inlinePlan(t.template, t.dependencies ?? []));
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
        resolveAuthority: this.host.resolveAuthority,
        now: this.host.now(),
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

  /** Compiled plans of inline launches by the digest of what they were compiled from (LRU). */
  private readonly plans = new Map<string, ExecutionPlan>();

  /**
   * The pinned plan of an inline template and its dependencies: compiled once per distinct
   * content (and set of host node definitions, which a plan pins), then served from the cache.
   */
  private inlinePlan(template: unknown, dependencies: { template: unknown; revision: number }[]): ExecutionPlan {
    let text: string;
    try {
      text = JSON.stringify([template, dependencies, this.host.nodeDefinitions.requestDefinitions()]);
    } catch {
      // Too deep (or not JSON) to digest: compile refuses it with its own error.
      return this.compileNow(template, dependencies);
    }
    const key = createHash('sha256').update(text).digest('hex');
    const cached = this.plans.get(key);
    if (cached) {
      this.plans.delete(key);
      this.plans.set(key, cached);
      return cached;
    }
    const plan = this.compileNow(template, dependencies);
    if (this.plans.size >= planCacheEntriesMax) this.plans.delete(this.plans.keys().next().value as string);
    this.plans.set(key, plan);
    return plan;
  }
}

/** The run id an idempotency key names: `k-` and 32 hex digits of its SHA-256. */
export function idempotentRunId(key: string): string {
  return keyedRunId('k', key, sha256Hex);
}

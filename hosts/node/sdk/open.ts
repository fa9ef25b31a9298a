// The SDK's `open`: the one place a Node runtime is put together. The engine component compiles
// while the store bundle opens; then the kernel is built over both, with the gateway wrapped by
// the add-ons that watch calls (live progress, trace context), and the add-ons that read the
// store and follow the kernel's commits (live streams, the OpenTelemetry exporter). Each add-on
// gets what it reads (the journal) and what it follows (the kernel), never the runtime.
import { EngineInstance } from '../../core/engine-instance.js';
import { authorityResolver, type AuthorityResolver } from '../../core/host-runtime.js';
import { defaultCapture, Kernel, type CapturePolicy } from '../../core/kernel.js';
import { ArtifactCodec, artifactKeysEnvVar, artifactKeysFromEnv } from '../artifacts/codec.js';
import { addAllowedTargets } from '../delivery/address.js';
import { storeLocation } from '../stores/location.js';
import { leaseDefaults } from '../../core/leases.js';
import { journalLimits } from '../limits.js';
import type { HostLog } from '../../core/types.js';
import { sha256Digest, sha256Hex } from '../../shared/digest.js';
import { LazyScriptImports } from '../../shared/sandbox.js';
import { deliveryOptionsOf, type DeliveryOptions } from '../delivery/deliverer.js';
import { LiveStreams, withLiveProgress } from '../observe/live.js';
import { stderrLog } from '../observe/log.js';
import type { TraceExporter } from '../observe/telemetry.js';
import { RunTraces, withTraceContext } from '../observe/trace-gateway.js';
import { openStoreBundle, type StoreBundle } from '../stores/open-store.js';
import { newOwnerId } from '../stores/owner-id.js';
import { nodeComponentLoader } from './component.js';
import { asError, WorkflowError } from './errors.js';
import { registryGateway, RegisteredCapabilities } from './gateway.js';
import { NodeDefinitionRegistry } from '../catalog/catalog.js';
import { assertCaptureOptions } from './launch-options.js';
import type { RuntimeOptions } from './runtime-types.js';

/** What a runtime is made of, once open. */
export interface RuntimeParts {
  kernel: Kernel;
  engine: EngineInstance;
  stores: StoreBundle;
  resolveAuthority: AuthorityResolver;
  disposeScripts: () => void;
  ownerId: string;
  pollMs: number;
  live: LiveStreams;
  log: HostLog;
  deliveryOptions: DeliveryOptions;
  traces: RunTraces;
  exporter: TraceExporter | undefined;
  /** What this host registered, listed per authority (`runtime.capabilities`). */
  registered: RegisteredCapabilities;
  /** The host's node definitions: `nodes` of the options, and those registered later. */
  nodeDefinitions: NodeDefinitionRegistry;
  /** The deployment's artifact TTL (`capture.retentionDays`), if it has one. */
  retentionDays?: number;
  /** Seals and opens artifacts, when the runtime has artifact keys. */
  artifactCodec?: ArtifactCodec;
  /** Takes the runtime's `delivery.allowTargets` back out of the process's allow-list (at close). */
  releaseTargets?: () => void;
}

/**
 * The artifact codec of a runtime: its key provider (`artifactKeys`, else `ADW_ARTIFACT_KEYS`),
 * sealing new artifacts when `capture.encryptArtifacts` is on (which needs a key provider).
 */
function artifactCodecOf(options: RuntimeOptions): ArtifactCodec | undefined {
  const keys = options.artifactKeys ?? artifactKeysFromEnv();
  const sealing = options.capture?.encryptArtifacts === true;
  if (sealing && !keys) throw new WorkflowError('policy.unsupported', `capture.encryptArtifacts needs artifact keys: artifactKeys in the runtime options or the host module, or ${artifactKeysEnvVar}`);
  return keys ? new ArtifactCodec(keys, sealing) : undefined;
}

/** The registry of the host's node definitions, with the options' `nodes` in it. */
function nodeDefinitionsOf(nodes: RuntimeOptions['nodes']): NodeDefinitionRegistry {
  const registry = new NodeDefinitionRegistry();
  if (nodes !== undefined && (nodes === null || typeof nodes !== 'object')) throw new WorkflowError('host.bad-option', 'nodes must be an object of node definitions by type ("vendor.name@1")');
  for (const [uses, definition] of Object.entries(nodes ?? {})) registry.register({ ...definition, uses });
  return registry;
}

/** The bound on one commit's events: `commitBytesMax`, else the documented default. */
function commitBytesMaxOf(options: RuntimeOptions): number {
  const bound = options.commitBytesMax ?? journalLimits.commitBytesMaxDefault;
  if (!Number.isSafeInteger(bound) || bound < journalLimits.commitBytesMin) {
    throw new WorkflowError('host.bad-option', `commitBytesMax must be an integer of at least ${journalLimits.commitBytesMin} bytes, not ${JSON.stringify(bound)}`);
  }
  return bound;
}

/** Where a runtime's store lives. */
function openStore(options: RuntimeOptions, artifactCodec: ArtifactCodec | undefined): Promise<StoreBundle> {
  return openStoreBundle(storeLocation(options), {
    ...(options.durability ? { durability: options.durability } : {}),
    ...(options.sqliteCacheKiB !== undefined ? { sqliteCacheKiB: options.sqliteCacheKiB } : {}),
    ...(options.sqliteQuickCheckBytesMax !== undefined ? { sqliteQuickCheckBytesMax: options.sqliteQuickCheckBytesMax } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(artifactCodec ? { artifactCodec } : {}),
  });
}

/** What the kernel keeps of payloads: the capture option without the store's retention. */
function capturePolicyOf(capture: RuntimeOptions['capture']): CapturePolicy {
  const { retentionDays: _retention, encryptArtifacts: _sealing, ...policy } = (capture ?? {}) as Partial<CapturePolicy> & { retentionDays?: number; encryptArtifacts?: boolean };
  return { ...defaultCapture, ...policy };
}

export async function openParts(options: RuntimeOptions): Promise<RuntimeParts> {
  const log = options.log ?? stderrLog();
  let codec: ArtifactCodec | undefined;
  let nodeDefinitions: NodeDefinitionRegistry;
  let releaseTargets: (() => void) | undefined;
  try {
    assertCaptureOptions(options.capture, ['retentionDays', 'encryptArtifacts']);
    if (options.capture?.encryptArtifacts !== undefined && typeof options.capture.encryptArtifacts !== 'boolean') throw new WorkflowError('policy.unsupported', `capture.encryptArtifacts must be true or false, not ${JSON.stringify(options.capture.encryptArtifacts)}`);
    codec = artifactCodecOf(options);
    nodeDefinitions = nodeDefinitionsOf(options.nodes);
    deliveryOptionsOf(options.delivery);
    if (options.delivery?.allowTargets !== undefined) releaseTargets = addAllowedTargets(options.delivery.allowTargets);
    if (options.dispatchBeforeCommit !== undefined && typeof options.dispatchBeforeCommit !== 'boolean') {
      throw new WorkflowError('host.bad-option', `dispatchBeforeCommit must be true or false, not ${JSON.stringify(options.dispatchBeforeCommit)}`);
    }
    // The exporter's modules load only for a runtime that exports spans.
    if (options.telemetry) (await import('../observe/telemetry.js')).tracesUrlOf(options.telemetry.otlpUrl);
  } catch (err) {
    releaseTargets?.();
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
  let stores: StoreBundle;
  try {
    stores = await openStore(options, codec);
  } catch (err) {
    await engineReady.catch(() => undefined);
    releaseTargets?.();
    throw err;
  }
  let exporter: TraceExporter | undefined;
  try {
    const engine = await engineReady;
    nodeDefinitions.reserve(((engine.describe().nodeTypes ?? []) as { uses: string }[]).map((t) => t.uses));
    const resolveAuthority = authorityResolver(options.authorities);
    const ownerId = options.ownerId ?? newOwnerId();
    const pollMs = options.pollMs ?? leaseDefaults.pollMs;
    const store = stores.journal;
    const traces = new RunTraces(store);
    kernel = new Kernel({
      store,
      engine,
      gateway: withTraceContext(withLiveProgress(registryGateway(options, nodeDefinitions), () => live), traces),
      log,
      now: options.now,
      authority: resolveAuthority,
      capture: capturePolicyOf(options.capture),
      sha256: sha256Digest,
      leases: { owner: ownerId, ttlMs: options.leaseTtlMs, pollMs },
      ...(options.dispatchBeforeCommit === false ? { dispatchBeforeCommit: false } : {}),
      commitBytesMax: commitBytesMaxOf(options),
    });
    // On a store that machines share, this process's clock is checked against the store's now
    // and every few seconds (leases are compared across machines' clocks; docs/postgres.md).
    await kernel.leases?.watchClock().catch((err) => log('warn', `checking the clock against the store's failed: ${(err as Error).message}`));
    live = new LiveStreams(store, kernel, pollMs);
    if (options.telemetry) exporter = await (await import('../observe/telemetry.js')).TraceExporter.start(store, kernel, options.telemetry);
    return { kernel, engine, stores, resolveAuthority, disposeScripts: () => scripts.dispose(), ownerId, pollMs, live, log, deliveryOptions: options.delivery ?? {}, traces, exporter, registered: new RegisteredCapabilities(options, nodeDefinitions), nodeDefinitions, ...(options.capture?.retentionDays !== undefined ? { retentionDays: options.capture.retentionDays } : {}), ...(codec ? { artifactCodec: codec } : {}), ...(releaseTargets ? { releaseTargets } : {}) };
  } catch (err) {
    releaseTargets?.();
    await exporter?.close();
    await kernel?.leases?.stop().catch(() => undefined);
    await stores.close();
    throw err;
  }
}

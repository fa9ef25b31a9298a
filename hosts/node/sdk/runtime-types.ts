// The SDK's option and handle types (what `WorkflowRuntime.open`, `launch` and the operator verbs
// take and give), apart from the class so that add-ons and commands can name them without
// importing the runtime.
import type { AuthorityResolver, LaunchTarget } from '../../core/host-runtime.js';
import type { CapturePolicy, RunOutcome } from '../../core/kernel.js';
import type { Authority, HostLog } from '../../core/types.js';
import type { DeliveryRecord, DeliveryState } from '../../core/delivery-outbox.js';
import type { GatewayRegistry } from './gateway.js';
import type { DeliveryTarget } from '../delivery/target.js';
import type { DeliveryOptions, DrainReport } from '../delivery/deliverer.js';
import type { LiveItem, LiveOptions } from '../observe/live.js';
import type { TelemetryOptions, TelemetryStats } from '../observe/telemetry.js';
import type { ArtifactKeyProvider } from '../artifacts/codec.js';

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
   * its request is on its way (default true; its outcome waits for that commit, or is folded
   * into it when it is ready before the commit is written). `false`: every
   * call starts only once its request is durable. See docs/durability.md, "Calls started beside
   * their commit".
   */
  dispatchBeforeCommit?: boolean;
  /** SQLite's page cache in KiB (default 2048; ignored on PostgreSQL). See docs/hosts.md, "Memory of the Node host". */
  sqliteCacheKiB?: number;
  /**
   * A SQLite store file (with its WAL) up to this size gets `PRAGMA quick_check` when the runtime
   * opens it, and a damaged one is refused (`store.corrupt`); default 32 MiB, 0: never. See
   * docs/durability.md, "Damaged SQLite files".
   */
  sqliteQuickCheckBytesMax?: number;
  /**
   * The most bytes (UTF-8) of events one activation of a run may commit; default 16 MiB. A call
   * whose output would take a commit past it fails its node with `run.commit-too-large` (naming
   * the bound and the size). See docs/durability.md, "The size of a commit".
   */
  commitBytesMax?: number;
  /** Who may do what; consulted at launch and again on every resume. Default: everything. */
  authorities?: AuthorityResolver | Authority;
  log?: HostLog;
  now?: () => number;
  /**
   * What is kept of capability payloads (default: replayable, 16 KiB inline, 16 MiB per artifact),
   * and for how long: `retentionDays` is the deployment's artifact TTL, carried out by
   * `runtime.artifacts.collect()`, `agent-workflow gc` and `serve` (docs/durability.md, "Artifact retention").
   */
  capture?: Partial<CapturePolicy> & {
    retentionDays?: number;
    /** Seal new artifacts at rest under `artifactKeys` (docs/durability.md, "Artifact encryption"). */
    encryptArtifacts?: boolean;
  };
  /**
   * The host's artifact keys (`artifactKeys({ current, keys })`): seal artifacts when
   * `capture.encryptArtifacts` is on, and open sealed ones; default `ADW_ARTIFACT_KEYS`.
   */
  artifactKeys?: ArtifactKeyProvider;
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

/** A node type a template may use (`runtime.nodeTypes()`, MCP `workflow_nodes_list`, the console's forms). */
export interface NodeType {
  /** `kind@version`, as a node's `uses` names it. */
  uses: string;
  /** A short noun for it. */
  label: string;
  /** `start` or `end` for the kinds a run begins or may end at. */
  role?: 'start' | 'end';
  /** The capability kind its calls ask the host for (`tool`, `agent`, …), if any. */
  capability?: string;
  /** The ports its outgoing edges name, for kinds with ports. */
  ports?: readonly string[];
  /** The JSON Schema of its `config`. */
  configSchema: unknown;
  implementationDigest?: string;
  /** Registered by this host (not built into the engine). */
  custom?: true;
  /** A custom type's effect: whether an unknown outcome of its call may be retried. */
  effect?: 'read-only' | 'idempotent' | 'unknown';
  description?: string;
  /** A custom type's output schema, if it has one. */
  outputSchema?: unknown;
}

// One activation of one run: the facts that came in, the events the engine decided, and the
// gateway work it staged. `emit` is the only way state changes: it builds the event envelope and
// applies it with `reduce`, so the journal and the state cannot disagree.
import type { ExecutionPlan } from '../compiler/plan.js';
import type { Graph } from '../compiler/graph.js';
import { derivedId, derivedIdV1, digestOf, eventId } from '../hash.js';
import type { Json } from '../json.js';
import { reduce } from '../state/reduce.js';
import type { EventEnvelope, RunState } from '../state/types.js';
import { utf8Encode } from '../utf8.js';
import { eventSchemaVersion, type EngineFlag } from '../version.js';

export interface ScriptLimits {
  fuel: number;
  memoryBytes: number;
  stackBytes: number;
  outputBytes: number;
}

export type ScriptOutcome = { ok: true; output: string; fuelUsed: number } | { ok: false; error: { code: string; message: string; line?: number } };

/** What the engine needs from its host while deciding (synchronous, deterministic). */
export interface ScriptHost {
  evaluate(source: string, inputJson: string, limits: ScriptLimits): ScriptOutcome;
  checkSyntax(source: string): { message: string; line?: number } | undefined;
}

/** Facts: inputs of an activation, in the past tense. */
export type Fact =
  | { type: 'run-requested'; input: Json; authority: { id: string; scopes: string[] }; parentRunId?: string; correlation?: Json; timeoutMs?: number; /** The deployment's capture mode, narrowed by the plan's templates (`capture-v2`). */ capture?: 'metadata' | 'standard' | 'replayable' }
  | { type: 'capability-completed'; invocationId: string; ok: boolean; output?: Json; error?: { code: string; message: string; retryable?: boolean }; artifact?: ArtifactRef }
  | { type: 'cancel-requested'; reason?: string; by?: string }
  | { type: 'resume-requested'; by?: string; authority?: { id: string; scopes: string[] }; afterRestart?: boolean; effects?: Record<string, string> }
  | { type: 'outcome-resolved'; nodeId: string; item?: number; resolution: 'succeeded' | 'retry' | 'fail'; output?: Json; reason?: string; by: string };

/** A captured (or redacted) capability payload, stored by the host under its digest. */
export interface ArtifactRef {
  digest: string;
  size: number;
  mediaType: string;
  redacted: boolean;
}

export interface ActivationRequest {
  runId: string;
  /** Milliseconds since the epoch; the only clock the engine knows. */
  now: number;
  facts: Fact[];
  /** Who caused this activation (`host`, `operator:<name>`, ...). */
  actor?: string;
  correlation?: Json;
}

export interface GatewayRequest {
  invocationId: string;
  runId: string;
  nodeId: string;
  item?: number;
  attempt: number;
  kind: string;
  name: string;
  input: Json;
  effect: string;
  config?: Json;
  deadlineAt?: number;
  reissued?: boolean;
  /**
   * The authority the run acts under at the moment the request is staged (resolved again at
   * every resume and operator command). Not journaled: `capability.requested` is unchanged.
   */
  authority: { id: string; scopes: string[] };
}

export class Activation {
  readonly events: EventEnvelope[] = [];
  readonly requests: GatewayRequest[] = [];
  readonly cancels: { invocationId: string; reason: string }[] = [];
  readonly number: number;
  /** Id derivation of the plan's `ids-v*` flag: runs replay with the ids they were recorded with. */
  readonly deriveId: (prefix: string, ...parts: (string | number)[]) => string;
  private readonly eventIdOf: (runId: string, seq: number) => string;
  /** Correlation of the run, carried by each of its events. */
  correlation: Json | undefined;
  /** Nodes whose incoming edges changed in this activation: the only ones that may become ready. */
  readonly candidates = new Set<string>();
  /**
   * The run clock of this activation (ms): with `clock-v2`, the later of the host's `now` and
   * the time of the run's previous activation, so time inside a run never goes backwards.
   */
  readonly now: number;
  /**
   * False for a run with capture mode `metadata` (`capture-v2`): its events are journaled with
   * digests and sizes instead of payloads, while the state keeps the payloads in memory.
   */
  keepsPayloads: boolean;

  constructor(
    public state: RunState | undefined,
    readonly plan: ExecutionPlan,
    readonly graph: Graph,
    readonly templateKey: string,
    readonly request: ActivationRequest,
    readonly scripts: ScriptHost,
  ) {
    this.number = (state?.activation ?? 0) + 1;
    const v2 = plan.flags.includes('ids-v2');
    this.deriveId = v2 ? derivedId : derivedIdV1;
    this.eventIdOf = v2 ? eventId : (runId, seq) => derivedIdV1('ev', runId, seq);
    this.correlation = request.correlation ?? state?.correlation;
    const clock = state?.clock;
    this.now = clock !== undefined && request.now < clock && plan.flags.includes('clock-v2') ? clock : request.now;
    this.keepsPayloads = state?.capture !== 'metadata';
  }

  /** Whether the run's plan was compiled with a behaviour flag (see engine/version.ts). */
  has(flag: EngineFlag): boolean {
    return this.plan.flags.includes(flag);
  }

  get run(): RunState {
    return this.state!;
  }

  /** The JSON of each event, built as it is emitted (the journal stores exactly this text). */
  readonly eventTexts: string[] = [];
  private envelope?: { occurredAt: string; workflow: EventEnvelope['workflow']; workflowJson: string; originJson: string; correlationJson: string };

  private envelopeParts() {
    if (!this.envelope) {
      const t = this.plan.templates[this.templateKey];
      const workflow: EventEnvelope['workflow'] = {
        id: t.template.metadata.id,
        ...(t.revision !== undefined ? { revision: t.revision } : {}),
        semanticHash: t.semanticHash,
        engineVersion: this.plan.engineVersion,
        nodeDefinitionSetHash: this.plan.nodeDefinitionSetHash,
      };
      const origin = { actor: this.request.actor ?? 'engine', activation: this.number };
      this.envelope = {
        occurredAt: new Date(this.now).toISOString(),
        workflow,
        workflowJson: JSON.stringify(workflow),
        originJson: JSON.stringify(origin),
        correlationJson: this.correlation !== undefined ? `,"correlation":${JSON.stringify(this.correlation)}` : '',
      };
    }
    return this.envelope;
  }

  emit(type: string, payload: Record<string, Json | undefined>, node?: { id: string; attempt: number; invocationId?: string; item?: number }): EventEnvelope {
    const seq = (this.state?.seq ?? 0) + 1;
    const runId = this.request.runId;
    const parts = this.envelopeParts();
    const event: EventEnvelope = {
      schemaVersion: eventSchemaVersion,
      eventId: this.eventIdOf(runId, seq),
      runId,
      seq,
      type,
      occurredAt: parts.occurredAt,
      workflow: parts.workflow,
      origin: { actor: this.request.actor ?? 'engine', activation: this.number },
      payload: stripUndefined(payload),
    };
    let nodeJson = '';
    if (node) {
      const spec = this.graph.nodes.get(node.id);
      event.node = { id: node.id, uses: spec ? spec.uses : 'unknown', attempt: node.attempt };
      if (node.invocationId !== undefined) event.node.invocationId = node.invocationId;
      if (node.item !== undefined) event.node.item = node.item;
      nodeJson = `,"node":${JSON.stringify(event.node)}`;
    }
    if (this.correlation !== undefined) event.correlation = this.correlation;
    // Key order is the envelope's declared order; the text is built from cached parts because
    // serialising in the guest's interpreter is the largest cost of an activation.
    const journaled = this.keepsPayloads ? event.payload : withoutPayloads(type, event.payload);
    this.eventTexts.push(
      `{"schemaVersion":${eventSchemaVersion},"eventId":"${event.eventId}","runId":${JSON.stringify(runId)},"seq":${seq},"type":"${type}","occurredAt":"${parts.occurredAt}","workflow":${parts.workflowJson}${nodeJson}${parts.correlationJson},"origin":${parts.originJson},"payload":${JSON.stringify(journaled)}}`,
    );
    this.state = reduce(this.state, event);
    this.events.push(event);
    if (type === 'edge.taken' || type === 'edge.skipped') this.candidates.add(payload.to as string);
    else if (type === 'run.started') for (const id of this.graph.roots) this.candidates.add(id);
    return event;
  }
}

/** The payload member of each event type that carries run data (under capture `metadata`). */
const payloadMembers: Record<string, string> = {
  'run.accepted': 'input',
  'capability.requested': 'input',
  'capability.completed': 'output',
  'capability.late': 'output',
  'node.output-committed': 'output',
  'node.item-committed': 'output',
  'node.resolved': 'output',
  'run.completed': 'output',
};

function digestMembers(key: string, value: Json): Record<string, Json> {
  return { [`${key}Digest`]: digestOf(value), [`${key}Bytes`]: utf8Encode(JSON.stringify(value)).length };
}

/**
 * An event's payload as a `metadata` run journals it: each payload member replaced by its digest
 * (`sha256:` of its canonical JSON) and its size in UTF-8 bytes; a foreach's items by their
 * digest and count. The state is reduced from the whole payload, which lives in memory only.
 */
export function withoutPayloads(type: string, payload: Record<string, Json>): Record<string, Json> {
  if (type === 'node.started' && payload.foreach !== undefined) {
    const { items, ...rest } = payload.foreach as Record<string, Json>;
    return { ...payload, foreach: { ...rest, itemsDigest: digestOf(items), itemsCount: (items as Json[]).length } };
  }
  const key = payloadMembers[type];
  if (key === undefined || payload[key] === undefined) return payload;
  const { [key]: value, ...rest } = payload;
  return { ...rest, ...digestMembers(key, value) };
}

function stripUndefined(payload: Record<string, Json | undefined>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(payload)) if (v !== undefined) out[k] = v;
  return out;
}

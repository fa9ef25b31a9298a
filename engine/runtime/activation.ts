// One activation of one run: the facts that came in, the events the engine decided, and the
// gateway work it staged. `emit` is the only way state changes: it builds the event envelope and
// applies it with `reduce`, so the journal and the state cannot disagree.
import type { Graph } from '../compiler/graph.js';
import { canonicalDigest, derivedId, derivedIdV1, eventIdPrefix } from '../hash.js';
import type { Json } from '../json.js';
import type { ScriptLimits } from '../limits.js';
import type { ArtifactRef, EnvelopeFields, EventEnvelope, EventNode, EventType, PayloadOf } from '../protocol/events.js';
import type { ActivationRequest, Fact } from '../protocol/facts.js';
import type { GatewayRequest } from '../protocol/gateway.js';
import type { ExecutionPlan } from '../protocol/plan.js';
import { reduce } from '../state/reduce.js';
import type { RunState } from '../state/types.js';
import { kindsOfPlan } from '../nodes/custom.js';
import type { NodeKind, NodeSettlement } from '../nodes/kind.js';
import { utf8Encode, utf8Length } from '../utf8.js';
import { eventSchemaVersion, type EngineFlag } from '../version.js';

export type ScriptOutcome = { ok: true; output: string; fuelUsed: number } | { ok: false; error: { code: string; message: string; line?: number } };

/** What the engine needs from its host while deciding (synchronous, deterministic). */
export interface ScriptHost {
  evaluate(source: string, inputJson: string, limits: ScriptLimits): ScriptOutcome;
  checkSyntax(source: string): { message: string; line?: number } | undefined;
}

export type { ActivationRequest, ArtifactRef, Fact, GatewayRequest };

/**
 * The JSON text of a staged request, when the node that staged it built it then (an agent's model
 * turn, from the conversation's kept text); it is `JSON.stringify` of the request either way.
 */
export const requestTexts = new WeakMap<GatewayRequest, string>();

/** The node (and call, and item) an event is about. */
export interface EventRef {
  id: string;
  attempt: number;
  invocationId?: string;
  item?: number;
}

export class Activation {
  /**
   * Events emitted so far. Only their text is kept (`eventTexts`): a foreach of scripts settles
   * every item within one activation, and holding its thousands of event objects until the commit
   * grew the component's memory by 4 MiB at 5,000 items (24.6 → 28.6 MiB).
   */
  eventCount = 0;
  /** Seq of the run before this activation's first event. */
  readonly seqBefore: number;
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
  /** The kind of a node of this run: built into the engine, or a host definition its plan pins. */
  readonly kindOf: (uses: string) => NodeKind;

  constructor(
    public state: RunState | undefined,
    readonly plan: ExecutionPlan,
    readonly graph: Graph,
    readonly templateKey: string,
    readonly request: ActivationRequest,
    readonly scripts: ScriptHost,
    /** How the node kinds settle their nodes (engine/runtime/advance.ts). */
    readonly settle: NodeSettlement,
  ) {
    this.number = (state?.activation ?? 0) + 1;
    this.kindOf = kindsOfPlan(plan);
    this.seqBefore = state?.seq ?? 0;
    const v2 = plan.flags.includes('ids-v2');
    this.deriveId = v2 ? derivedId : derivedIdV1;
    if (v2) {
      // One lookup of the run's prefix per activation, not one per event.
      let prefix: string | undefined;
      this.eventIdOf = (runId, seq) => `${(prefix ??= eventIdPrefix(runId))}${seq.toString(36)}`;
    } else {
      this.eventIdOf = (runId, seq) => derivedIdV1('ev', runId, seq);
    }
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
  /** Characters (UTF-16 code units) of `eventTexts`: a UTF-8 byte is at most 3 of them apart. */
  eventChars = 0;

  /** UTF-8 bytes of the events emitted so far. */
  commitBytes(): number {
    let bytes = 0;
    for (const text of this.eventTexts) bytes += utf8Length(text);
    return bytes;
  }
  private envelope?: { occurredAt: string; workflow: EnvelopeFields['workflow']; workflowJson: string; origin: EnvelopeFields['origin']; originJson: string; runIdJson: string; correlationJson: string };

  private envelopeParts() {
    if (!this.envelope) {
      const { workflow, workflowJson } = workflowOf(this.plan, this.templateKey);
      const origin = { actor: this.request.actor ?? 'engine', activation: this.number };
      this.envelope = {
        occurredAt: new Date(this.now).toISOString(),
        workflow,
        workflowJson,
        origin,
        originJson: JSON.stringify(origin),
        runIdJson: JSON.stringify(this.request.runId),
        correlationJson: this.correlation !== undefined ? `,"correlation":${JSON.stringify(this.correlation)}` : '',
      };
    }
    return this.envelope;
  }

  /**
   * Journals one event and applies it to the state. A payload member that is `undefined` is
   * left out of the journal's text (and so of any state rebuilt from it).
   */
  emit<T extends EventType>(type: T, payload: PayloadOf<T>, node?: EventRef): EventEnvelope<T> {
    const seq = (this.state?.seq ?? 0) + 1;
    const runId = this.request.runId;
    const parts = this.envelopeParts();
    const event = {
      schemaVersion: eventSchemaVersion,
      eventId: this.eventIdOf(runId, seq),
      runId,
      seq,
      type,
      occurredAt: parts.occurredAt,
      workflow: parts.workflow,
      origin: parts.origin,
      // A member that is `undefined` stays in the object and is left out of the text by
      // `JSON.stringify`; `reduce` copies members one by one, never a whole payload.
      payload,
    } as EnvelopeFields & { type: T; payload: PayloadOf<T> };
    let nodeJson = '';
    if (node) {
      const spec = this.graph.nodes.get(node.id);
      const n: EventNode = (event.node = { id: node.id, uses: spec ? spec.uses : 'unknown', attempt: node.attempt });
      if (node.invocationId !== undefined) n.invocationId = node.invocationId;
      if (node.item !== undefined) n.item = node.item;
      // The text `JSON.stringify(n)` would give, from the node's cached head: an attempt and an
      // item are integers, whose JSON is their decimal text.
      const head = spec ? this.graph.nodeJsonHead.get(node.id) : undefined;
      if (head !== undefined && Number.isInteger(n.attempt) && (n.item === undefined || Number.isInteger(n.item))) {
        nodeJson = `,"node":${head}${n.attempt}${n.invocationId !== undefined ? `,"invocationId":${JSON.stringify(n.invocationId)}` : ''}${n.item !== undefined ? `,"item":${n.item}` : ''}}`;
      } else {
        nodeJson = `,"node":${JSON.stringify(n)}`;
      }
    }
    if (this.correlation !== undefined) event.correlation = this.correlation;
    // Key order is the envelope's declared order; the text is built from cached parts because
    // serialising in the guest's interpreter is the largest cost of an activation.
    const journaled = this.keepsPayloads ? event.payload : withoutPayloads(type, event.payload as Record<string, Json>);
    this.eventTexts.push(
      `{"schemaVersion":${eventSchemaVersion},"eventId":"${event.eventId}","runId":${parts.runIdJson},"seq":${seq},"type":"${type}","occurredAt":"${parts.occurredAt}","workflow":${parts.workflowJson}${nodeJson}${parts.correlationJson},"origin":${parts.originJson},"payload":${JSON.stringify(journaled)}}`,
    );
    this.eventChars += this.eventTexts[this.eventTexts.length - 1].length;
    // One member of the union (TypeScript does not narrow a generic `T` to it by itself).
    const emitted = event as unknown as EventEnvelope;
    this.state = reduce(this.state, emitted);
    this.eventCount++;
    if (emitted.type === 'edge.taken' || emitted.type === 'edge.skipped') this.candidates.add(emitted.payload.to);
    else if (emitted.type === 'run.started') for (const id of this.graph.roots) this.candidates.add(id);
    return emitted as EventEnvelope<T>;
  }
}

/** The payload member of each event type that carries run data (under capture `metadata`). */
const payloadMembers: Partial<Record<EventType, string>> = {
  'run.accepted': 'input',
  'capability.requested': 'input',
  'capability.completed': 'output',
  'capability.late': 'output',
  'node.output-committed': 'output',
  'node.item-committed': 'output',
  'node.agent-turn': 'message',
  'node.agent-tool-result': 'output',
  'node.resolved': 'output',
  'run.completed': 'output',
};

function digestMembers(key: string, value: Json): Record<string, Json> {
  return { [`${key}Digest`]: canonicalDigest(value), [`${key}Bytes`]: utf8Encode(JSON.stringify(value)).length };
}

/**
 * An event's payload as a `metadata` run journals it: each payload member replaced by its digest
 * (`sha256:` of its canonical JSON) and its size in UTF-8 bytes; a foreach's items by their
 * digest and count. The state is reduced from the whole payload, which lives in memory only.
 */
export function withoutPayloads(type: EventType, payload: Record<string, Json>): Record<string, Json> {
  if (type === 'node.started' && payload.foreach !== undefined) {
    const { items, ...rest } = payload.foreach as Record<string, Json>;
    return { ...payload, foreach: { ...rest, itemsDigest: canonicalDigest(items), itemsCount: (items as Json[]).length } };
  }
  const key = payloadMembers[type];
  if (key === undefined || payload[key] === undefined) return payload;
  const { [key]: value, ...rest } = payload;
  return { ...rest, ...digestMembers(key, value) };
}

const workflows = new WeakMap<object, { workflow: EnvelopeFields['workflow']; workflowJson: string }>();

/** The `workflow` member of every event of a template of a plan, and its JSON, built once per plan. */
function workflowOf(plan: ExecutionPlan, templateKey: string): { workflow: EnvelopeFields['workflow']; workflowJson: string } {
  const t = plan.templates[templateKey];
  let cached = workflows.get(t);
  if (!cached) {
    const workflow: EnvelopeFields['workflow'] = {
      id: t.template.metadata.id,
      ...(t.revision !== undefined ? { revision: t.revision } : {}),
      semanticHash: t.semanticHash,
      engineVersion: plan.engineVersion,
      nodeDefinitionSetHash: plan.nodeDefinitionSetHash,
    };
    cached = { workflow, workflowJson: JSON.stringify(workflow) };
    workflows.set(t, cached);
  }
  return cached;
}

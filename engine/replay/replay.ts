// Inspect and recorded replay of a journal. Recorded replay re-runs the engine (and scripts)
// against the recorded facts of each activation and never reaches a gateway: the host it runs
// on has no gateway, only a collector.
import { EngineCore, loadPlan, type CommitData } from '../core.js';
import { EngineError } from '../errors.js';
import type { Json } from '../json.js';
import type { Fact, GatewayRequest, ScriptHost } from '../runtime/activation.js';
import { projectRun } from '../runtime/projection.js';
import { reduce } from '../state/reduce.js';
import type { EventEnvelope, PayloadOf } from '../protocol/events.js';
import type { ExecutionPlan } from '../protocol/plan.js';
import type { RunState } from '../state/types.js';

export interface ReplayRequest {
  mode: 'inspect' | 'recorded';
  /** The plan the run pinned. */
  plan: ExecutionPlan;
  /** A different plan to replay against (an edited template); recorded mode only. */
  editedPlan?: ExecutionPlan;
  /** The journal's events, parsed (a request whose JSON carries them). */
  events?: EventEnvelope[];
  /**
   * The journal's events as the texts the journal keeps (the request's lines after its JSON):
   * each is parsed when it is read, and a recorded replay compares its own events with them as
   * they are. Nothing keeps the parsed journal whole.
   */
  eventTexts?: string[];
  /** Captured artifacts by digest, as JSON text (recorded mode needs those of capability results). */
  artifacts?: Record<string, string>;
  /** Inspect mode: also answer the whole folded run state (what a checkpoint holds). */
  includeState?: boolean;
}

interface NodeView {
  status: string;
  attempt: number;
  output?: Json;
  error?: Json;
}

function nodesView(state: RunState | undefined): Record<string, NodeView> {
  const out: Record<string, NodeView> = {};
  for (const [id, n] of Object.entries(state?.nodes ?? {})) {
    const v: NodeView = { status: n.status, attempt: n.attempt };
    if (n.output !== undefined) v.output = n.output;
    if (n.error !== undefined) v.error = n.error as unknown as Json;
    out[id] = v;
  }
  return out;
}

function outcomeOf(state: RunState | undefined): Json {
  if (!state) return { status: 'unknown' };
  const o: Record<string, Json> = { status: state.status };
  if (state.pausedReason) o.pausedReason = state.pausedReason;
  if (state.result !== undefined) o.output = state.result;
  if (state.error !== undefined) o.error = state.error as unknown as Json;
  return o;
}

/** The graph of a run's template; `undefined` for a plan this engine cannot run (inspect still folds it). */
function graphOf(plan: ExecutionPlan, templateKey: string) {
  try {
    return loadPlan(plan).graphs.get(templateKey);
  } catch (err) {
    if (err instanceof EngineError) return undefined;
    throw err;
  }
}

/**
 * Folds a journal into its state. The report carries the run's projection (what a commit of the
 * last activation would have carried): hosts derive it this way for runs recorded before
 * projections were stored.
 */
/** The recorded journal, read one event at a time. */
interface Journal {
  count: number;
  event(i: number): EventEnvelope;
  /** The event's text as the journal keeps it, when the request carried texts. */
  text(i: number): string | undefined;
}

/**
 * The event types whose recorded payload is a fact a recorded replay feeds back (see `factsOf`;
 * `run.queued` completes the `run-requested` of its `run.accepted`; a `node.needs-attention`
 * whose evidence says `unavailable` was a `capability-unavailable`, its reason in the
 * `capability.abandoned` before it).
 */
const factTypes = new Set<string>(['run.accepted', 'run.queued', 'capability.completed', 'capability.late', 'run.cancel-requested', 'run.resumed', 'node.resolved', 'capability.abandoned', 'node.needs-attention']);

const layoutHead = '{"schemaVersion":';
const typeKey = ',"type":"';
const originKey = '"origin":';

/**
 * The type of an event read from its text without parsing it, where the text has the layout the
 * engine writes (it starts with `{"schemaVersion":`): `type` follows `schemaVersion`, `eventId`,
 * `runId` and `seq`, none of which can hold a quote, so the first `,"type":"` is the member
 * itself. `undefined` when the text does not read that way; the caller then parses the event.
 */
function typeOfText(text: string): string | undefined {
  if (!text.startsWith(layoutHead)) return undefined;
  const at = text.indexOf(typeKey);
  if (at < 0) return undefined;
  const from = at + typeKey.length;
  const end = text.indexOf('"', from);
  return end < 0 ? undefined : text.slice(from, end);
}

/**
 * Whether an event's text says it belongs to the activation whose `origin` member reads
 * `origin` (its JSON): `"origin":` occurs once in the text, followed by exactly that. A text in
 * which `"origin":` occurs more than once (a payload or correlation that holds the key) is
 * parsed instead. Grouping decides only which facts go into which activation; whatever it
 * decides, the replay is identical only where every produced event equals its recorded text.
 */
function sameOrigin(text: string, origin: string): boolean {
  const at = text.indexOf(originKey);
  return at >= 0 && text.startsWith(origin, at + originKey.length) && text.indexOf(originKey, at + originKey.length) < 0;
}

function journalOf(request: ReplayRequest): Journal {
  const texts = request.eventTexts;
  if (texts) {
    return {
      count: texts.length,
      event: (i) => {
        try {
          return JSON.parse(texts[i]) as EventEnvelope;
        } catch (err) {
          throw new EngineError('engine.bad-json', `event ${i + 1} of the replay request is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
        }
      },
      text: (i) => texts[i],
    };
  }
  const events = request.events ?? [];
  return { count: events.length, event: (i) => events[i], text: () => undefined };
}

export function inspect(request: ReplayRequest): Json {
  const journal = journalOf(request);
  let state: RunState | undefined;
  for (let i = 0; i < journal.count; i++) state = reduce(state, journal.event(i));
  const graph = state ? graphOf(request.plan, state.templateKey) : undefined;
  return {
    mode: 'inspect',
    runId: state?.runId ?? null,
    events: journal.count,
    outcome: outcomeOf(state),
    ...(state && graph ? { projection: projectRun(state, graph) as unknown as Json } : {}),
    nodes: nodesView(state) as unknown as Json,
    ...(request.includeState ? { state: (state ?? null) as unknown as Json } : {}),
  };
}

/** The facts an activation received, read back from the events it wrote. */
function capturedOutput(p: PayloadOf<'capability.completed'> & { ok: true }, artifacts: Record<string, string>): Json {
  if (!p.artifact) return p.output as Json;
  const ref = p.artifact;
  const text = ref.redacted ? undefined : artifacts[ref.digest];
  if (text === undefined) {
    throw new EngineError(
      'replay.artifact-missing',
      `recorded replay needs the result of ${p.invocationId}, which was ${ref.redacted ? 'redacted by the capture policy' : `not captured (artifact ${ref.digest} is not in the journal export)`}; replay with mode inspect, or record runs with capture mode "replayable"`,
      { invocationId: p.invocationId, digest: ref.digest, redacted: ref.redacted === true },
    );
  }
  return JSON.parse(text) as Json;
}

function factsOf(group: EventEnvelope[], artifacts: Record<string, string>): Fact[] {
  const facts: Fact[] = [];
  for (const e of group) {
    switch (e.type) {
      case 'run.accepted': {
        const p = e.payload;
        facts.push({
          type: 'run-requested',
          input: p.input as Json,
          authority: p.authority,
          ...(p.parentRunId !== undefined ? { parentRunId: p.parentRunId } : {}),
          ...(p.deadlineAt !== undefined ? { timeoutMs: p.deadlineAt - Date.parse(e.occurredAt) } : {}),
        });
        break;
      }
      case 'run.queued': {
        const requested = facts[facts.length - 1];
        if (requested?.type === 'run-requested') requested.queuedAt = Date.parse(e.payload.queuedAt);
        break;
      }
      case 'capability.completed':
      case 'capability.late': {
        const p = e.payload;
        facts.push({
          type: 'capability-completed',
          invocationId: p.invocationId,
          ok: p.ok,
          ...(p.ok ? { output: capturedOutput(p, artifacts) } : { error: p.error }),
          ...('artifact' in p && p.artifact ? { artifact: p.artifact } : {}),
        });
        break;
      }
      case 'run.cancel-requested':
        facts.push({ type: 'cancel-requested', reason: e.payload.reason, by: e.payload.by });
        break;
      case 'run.resumed': {
        const p = e.payload;
        if (p.by !== undefined) facts.push({ type: 'resume-requested', by: p.by, authority: p.authority, afterRestart: p.afterRestart, effects: p.effects, ...(p.attempts ? { attempts: p.attempts } : {}) });
        break;
      }
      case 'node.needs-attention': {
        // The host reported the call not carried out (`capability-unavailable`): its reason is
        // the one the activation's `capability.abandoned` of that call recorded.
        const p = e.payload;
        if (p.evidence.reason !== 'unavailable') break;
        const abandoned = group.find((g) => g.type === 'capability.abandoned' && g.payload.invocationId === p.invocationId) as EventEnvelope<'capability.abandoned'> | undefined;
        facts.push({ type: 'capability-unavailable', invocationId: p.invocationId, reason: abandoned?.payload.reason ?? '' });
        break;
      }
      case 'node.resolved': {
        const p = e.payload;
        facts.push({ type: 'outcome-resolved', nodeId: e.node!.id, ...(p.item !== undefined ? { item: p.item } : {}), resolution: p.resolution, output: p.output, reason: p.reason, by: p.by, ...(p.attentionSeq !== undefined ? { attentionSeq: p.attentionSeq } : {}) });
        break;
      }
      default:
        break;
    }
  }
  return facts;
}

/** Plan identity fields: they differ by construction when an edited template is replayed. */
const planIdentity = new Set(['planHash', 'templateKey']);

/**
 * The fields of an event in the envelope's declared order, whatever order the recorded text had
 * (an older engine wrote `node` after `payload`).
 */
function comparable(e: EventEnvelope, withEnvelope: boolean): string {
  if (withEnvelope) return JSON.stringify([e.schemaVersion, e.eventId, e.runId, e.seq, e.type, e.occurredAt, e.workflow, e.node ?? null, e.correlation ?? null, e.origin, e.payload]);
  const payload = e.type === 'run.accepted' ? Object.fromEntries(Object.entries(e.payload).filter(([k]) => !planIdentity.has(k))) : e.payload;
  return JSON.stringify({ seq: e.seq, type: e.type, node: e.node ?? null, payload });
}

/** The recorded events of one activation, as a recorded replay needs them. */
interface Group {
  /** The activation's first event: its time, actor and correlation are the activation's. */
  first: EventEnvelope;
  /** The JSON of the activation's `origin` member, as its events carry it. */
  origin: string;
  /** Its events that carry facts, in journal order. */
  facts: EventEnvelope[];
  /** Whether it holds nothing but `checkpoint.committed` events. */
  onlyCheckpoints: boolean;
}

export function recorded(request: ReplayRequest, scripts: ScriptHost): Json {
  const journal = journalOf(request);
  const accepted = journal.count > 0 ? journal.event(0) : undefined;
  if (accepted === undefined || accepted.type !== 'run.accepted') throw new EngineError('replay.bad-journal', 'a journal must start with run.accepted');
  const runId = accepted.runId;
  if (accepted.payload.capture === 'metadata') {
    throw new EngineError('replay.payloads-not-kept', `run ${runId} was recorded with capture mode metadata: its journal holds digests, not the payloads recorded replay needs; replay it with mode inspect`, { runId });
  }
  const plan = request.editedPlan ?? request.plan;
  const edited = request.editedPlan !== undefined && request.editedPlan.planHash !== request.plan.planHash;
  loadPlan(plan);
  // The replayed events are kept as the text the engine wrote; one is parsed only where the
  // comparison with its recorded event needs it (a divergence, an older field order, an edited plan).
  const produced: string[] = [];
  const parsed: EventEnvelope[] = [];
  const producedEvent = (i: number): EventEnvelope => (parsed[i] ??= JSON.parse(produced[i]) as EventEnvelope);
  let producedSeq = 0;
  const requested = new Set<string>();
  const gatewayCalls: GatewayRequest[] = [];
  const core = new EngineCore({
    evaluate: (source, input, limits) => scripts.evaluate(source, input, limits),
    checkSyntax: (source) => scripts.checkSyntax(source),
    // A run that ended is dropped from the hot set; evidence recorded after its end (a late
    // completion) activates it cold again, from the events replayed so far.
    load: () => (produced.length === 0 ? undefined : { plan: JSON.stringify(plan), events: produced, lastSeq: producedSeq }),
    commit: (c: CommitData) => {
      for (const line of c.events) produced.push(line);
      producedSeq = c.lastSeq;
    },
    request: (r) => {
      requested.add(r.invocationId);
      gatewayCalls.push(r);
    },
    cancel: () => undefined,
  }, { checkpointTexts: false, projections: false });

  const skippedFacts: Json[] = [];
  const templateKey = accepted.payload.templateKey;
  const replayGroup = (group: Group) => {
    const facts = factsOf(group.facts, request.artifacts ?? {}).filter((f) => {
      if (f.type !== 'capability-completed' || requested.has(f.invocationId) || !edited) return true;
      skippedFacts.push({ invocationId: f.invocationId, reason: 'the edited plan never requested it' });
      return false;
    });
    if (facts.length === 0 && group.onlyCheckpoints) return;
    const first = group.first;
    const activationRequest = {
      runId,
      now: Date.parse(first.occurredAt),
      facts,
      actor: first.origin.actor,
      ...(first.correlation !== undefined ? { correlation: first.correlation } : {}),
    };
    try {
      if (produced.length === 0) core.activate(activationRequest, { plan, templateKey: edited ? plan.root : templateKey });
      else core.activate(activationRequest);
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
      skippedFacts.push({ activation: first.origin.activation, error: { code: err.code, message: err.message } });
    }
  };
  // One pass over the journal: each activation's events (they share `origin.activation`) are
  // replayed as one activation and its completions are noted; no event is kept once its
  // activation is replayed. An event is parsed only when it starts an activation or carries a
  // fact: the others (most of a journal: the engine's own decisions) are read from their text,
  // since parsing an event costs about as much as the engine deciding it.
  const completed = new Set<string>();
  let group: Group | undefined;
  const startGroup = (e: EventEnvelope): Group => ({ first: e, origin: JSON.stringify(e.origin), facts: factTypes.has(e.type) ? [e] : [], onlyCheckpoints: e.type === 'checkpoint.committed' });
  for (let i = 0; i < journal.count; i++) {
    const text = i === 0 ? undefined : journal.text(i);
    if (group !== undefined && text !== undefined) {
      const type = typeOfText(text);
      if (type !== undefined && !factTypes.has(type) && sameOrigin(text, group.origin)) {
        if (type !== 'checkpoint.committed') group.onlyCheckpoints = false;
        continue;
      }
    }
    const e = i === 0 ? accepted : journal.event(i);
    if (e.type === 'capability.completed') completed.add(e.payload.invocationId);
    if (group !== undefined && group.first.origin.activation === e.origin.activation) {
      if (factTypes.has(e.type)) group.facts.push(e);
      if (e.type !== 'checkpoint.committed') group.onlyCheckpoints = false;
      continue;
    }
    if (group !== undefined) replayGroup(group);
    group = startGroup(e);
  }
  if (group !== undefined) replayGroup(group);

  let firstDivergence: Json | null = null;
  const n = Math.max(produced.length, journal.count);
  for (let i = 0; i < n; i++) {
    // The same text in the envelope's declared order is the same event; anything else is compared
    // field by field.
    const text = i < journal.count && !edited ? journal.text(i) : undefined;
    if (text !== undefined && i < produced.length && text === produced[i]) continue;
    const a = i < journal.count ? journal.event(i) : undefined;
    if (a && i < produced.length && ((!edited && text === undefined && JSON.stringify(a) === produced[i]) || comparable(a, !edited) === comparable(producedEvent(i), !edited))) continue;
    const b = i < produced.length ? producedEvent(i) : undefined;
    firstDivergence = {
      seq: i + 1,
      nodeId: (a?.node?.id ?? b?.node?.id ?? null) as Json,
      recorded: a ? ({ type: a.type, node: a.node ?? null, payload: a.payload } as unknown as Json) : null,
      replayed: b ? ({ type: b.type, node: b.node ?? null, payload: b.payload } as unknown as Json) : null,
    };
    break;
  }
  // Identical events against the same plan fold to the same state: the one the replay's engine
  // holds after its last activation. Only a replay that diverged (or ran an edited plan) folds the
  // recorded journal and the replayed events each on their own.
  let recordedState: RunState | undefined = firstDivergence === null && !edited ? core.lastState : undefined;
  let replayedState = recordedState;
  if (recordedState === undefined) {
    for (let i = 0; i < journal.count; i++) recordedState = reduce(recordedState, i === 0 ? accepted : journal.event(i));
    for (let i = 0; i < produced.length; i++) replayedState = reduce(replayedState, producedEvent(i));
  }
  const changedNodes: Json[] = [];
  const recordedNodes = nodesView(recordedState);
  const replayedNodes = nodesView(replayedState);
  for (const id of Object.keys({ ...recordedNodes, ...replayedNodes })) {
    const x = JSON.stringify(recordedNodes[id] ?? null);
    const y = JSON.stringify(replayedNodes[id] ?? null);
    if (x !== y) changedNodes.push({ nodeId: id, recorded: (recordedNodes[id] ?? null) as unknown as Json, replayed: (replayedNodes[id] ?? null) as unknown as Json });
  }
  const unrecorded = gatewayCalls.filter((r) => !completed.has(r.invocationId));
  return {
    mode: 'recorded',
    runId,
    edited,
    identical: firstDivergence === null,
    eventsRecorded: journal.count,
    eventsReplayed: produced.length,
    firstDivergence,
    recordedOutcome: outcomeOf(recordedState),
    replayedOutcome: outcomeOf(replayedState),
    changedNodes,
    unrecordedCapabilities: unrecorded.map((r) => ({ invocationId: r.invocationId, nodeId: r.nodeId, kind: r.kind, name: r.name })) as unknown as Json,
    skippedFacts,
  };
}

// Runs the engine from its TypeScript sources, in this process, against an in-memory host: the
// fast way to test its protocol (facts in, events and gateway requests out). Every engine import
// of the protocol tests is in this file, so a move inside `engine/` is fixed here once.
//
// A test is a script: build a template, send facts, compare the whole output of each activation
// (every event with its node, attempt, item and payload; every gateway request and cancel). The
// harness checks, after every activation, that the state the engine keeps equals the fold of all
// events from scratch, and that every checkpoint it commits equals that fold at its seq.
import { afterEach, expect } from 'vitest';
import { compilePlan } from '../../engine/compiler/plan.js';
import type { ExecutionPlan } from '../../engine/protocol/plan.js';
import { validateTemplate } from '../../engine/compiler/validate.js';
import { checkpointWithoutPayloads, EngineCore, type ActivationSummary, type CommitData, type CoreHost } from '../../engine/core.js';
import type { RunState } from '../../engine/state/types.js';
import { canonicalDigest, derivedId } from '../../engine/hash.js';
import { inspect, recorded } from '../../engine/replay/replay.js';
import { ScriptEvaluator } from '../../sandbox/index.js';
import { authority, fact, type Ev, type FactLiteral, type NodeLiteral, type Obj, type Req, t0 } from './builders.js';

export * from './builders.js';
export { canonicalDigest };
export type { ActivationSummary };

/** The real QuickJS sandbox: it evaluates synchronously, as the engine's `sandbox` import does. */
const scripts = await ScriptEvaluator.create();

export interface Step {
  summary: ActivationSummary;
  events: Ev[];
  requests: Req[];
  cancels: { inv: string; reason: string }[];
  /** Whether this activation committed a checkpoint. */
  checkpoint: boolean;
}

// ---- the run under test ---------------------------------------------------------------------

interface Journal {
  plan: string;
  events: string[];
  checkpoint?: string;
}

export interface RunOptions {
  runId?: string;
  /** Templates of called workflows, as `{ template, revision }`. */
  dependencies?: { template: unknown; revision: number }[];
  /** The run's `capture` mode is `metadata`: its journal and checkpoints hold no payloads. */
  metadata?: boolean;
  /** Behaviour flags taken out of the plan, as a plan compiled by an older engine lacks them. */
  withoutFlags?: string[];
}

const live: ProtocolRun[] = [];

/**
 * One run on an in-memory host. `start` and `activate` return the whole output of one
 * activation; `restart` drops the engine instance (the next activation rebuilds the run from its
 * checkpoint and events, as after a host restart).
 */
export class ProtocolRun {
  readonly runId: string;
  readonly plan: ExecutionPlan;
  now = t0;
  private core: EngineCore;
  private readonly journal: Journal;
  private readonly names = new Map<string, string>();
  private readonly ids = new Map<string, string>();
  private readonly nodeAttempts = new Map<string, number>();
  /** Model turns answered so far, per agent-loop node (for the names of its invocations). */
  private readonly agentTurns = new Map<string, number>();
  private readonly metadata: boolean;
  private staged: { commits: CommitData[]; requests: Obj[]; cancels: { invocationId: string; reason: string }[] } = { commits: [], requests: [], cancels: [] };
  /** How many times the fold of the events was compared with the engine's state or a checkpoint. */
  foldChecks = 0;

  constructor(tmpl: Obj, options: RunOptions = {}) {
    this.runId = options.runId ?? 'run-1';
    this.metadata = options.metadata === true;
    const compiled = compilePlan({ root: { template: tmpl }, dependencies: options.dependencies }, (source) => scripts.checkSyntax(source));
    this.plan = options.withoutFlags ? olderPlan(compiled, options.withoutFlags) : compiled;
    this.journal = { plan: JSON.stringify(this.plan), events: [] };
    this.core = new EngineCore(this.host());
    live.push(this);
  }

  /** The template key of the root (`<id>@inline`). */
  get templateKey(): string {
    return this.plan.root;
  }

  /** The node ids in the engine's topological order, as `run.accepted` lists them. */
  nodeIds(): string[] {
    return JSON.parse(this.journal.events[0]).payload.nodeIds;
  }

  /** Every event journaled so far, as the tests compare them. */
  events(): Ev[] {
    return this.journal.events.map((line) => this.normalEvent(JSON.parse(line)));
  }

  /** The raw journal lines (for capture tests and the fold check). */
  journalLines(): string[] {
    return [...this.journal.events];
  }

  /** The `run.accepted` payload this run's `start` produces, for expectations. */
  accepted(input: unknown, extra: Obj = {}): Ev {
    return { type: 'run.accepted', payload: { input, authority, templateKey: this.templateKey, planHash: this.plan.planHash, nodeIds: this.nodeIds(), ...extra } };
  }

  private host(): CoreHost {
    return {
      evaluate: (source, input, l) => scripts.evaluate(source, input, l),
      checkSyntax: (source) => scripts.checkSyntax(source),
      load: (runId) => {
        if (runId !== this.runId || this.journal.events.length === 0) return undefined;
        return { plan: this.journal.plan, checkpoint: this.journal.checkpoint, events: this.eventsAfterCheckpoint(), lastSeq: this.journal.events.length };
      },
      commit: (c) => this.staged.commits.push(c),
      request: (r) => this.staged.requests.push(r as unknown as Obj),
      cancel: (invocationId, reason) => this.staged.cancels.push({ invocationId, reason }),
    };
  }

  private eventsAfterCheckpoint(): string[] {
    if (!this.journal.checkpoint) return [...this.journal.events];
    const seq = (JSON.parse(this.journal.checkpoint) as { seq: number }).seq;
    return this.journal.events.slice(seq);
  }

  /** The first activation: the `run-requested` fact with the plan. */
  start(input: unknown, extra: Obj = {}, at = this.now): Step {
    const capture = this.metadata ? { capture: 'metadata' } : {};
    return this.run([fact.runRequested(input, { ...capture, ...extra })], at, true);
  }

  /** One activation with these facts at time `at` (default: the time of the previous one). */
  activate(facts: FactLiteral | FactLiteral[] = [], at = this.now, actor?: string): Step {
    return this.run(Array.isArray(facts) ? facts : [facts], at, false, actor);
  }

  /** An activation without facts, as a host's timer sends it. */
  wake(at: number): Step {
    return this.activate([], at);
  }

  /** An activation the engine refuses: answers the error's code and message; nothing is committed. */
  refused(facts: FactLiteral | FactLiteral[], at = this.now): { code: string; message: string } {
    const before = this.journal.events.length;
    try {
      if (this.journal.events.length === 0) this.run(Array.isArray(facts) ? facts : [facts], at, true);
      else this.activate(facts, at);
    } catch (err) {
      expect(this.journal.events.length, 'a refused activation commits nothing').toBe(before);
      const e = err as { code?: string; message: string };
      return { code: e.code ?? 'not-an-engine-error', message: e.message };
    }
    throw new Error('the engine accepted an activation that the test expected it to refuse');
  }

  /** Drops the engine instance: the next activation rebuilds the run from the journal. */
  restart(): void {
    this.core = new EngineCore(this.host());
  }

  private run(facts: FactLiteral[], at: number, isNew: boolean, actor?: string): Step {
    this.now = at;
    this.staged = { commits: [], requests: [], cancels: [] };
    const request = { runId: this.runId, now: at, facts: facts.map((f) => this.realFact(f)), ...(actor ? { actor } : {}) };
    const summary = isNew ? this.core.activate(request as never, { plan: this.plan }) : this.core.activate(request as never);
    const { commits, requests, cancels } = this.staged;
    expect(commits.length, 'an activation commits at most once').toBeLessThanOrEqual(1);
    const events: Ev[] = [];
    let checkpoint = false;
    for (const c of commits) {
      expect(c.runId).toBe(this.runId);
      expect(c.expectedSeq, 'a commit continues the journal').toBe(this.journal.events.length);
      expect(c.lastSeq).toBe(this.journal.events.length + c.events.length);
      for (const line of c.events) {
        const e = JSON.parse(line);
        expect(e.seq, 'events are numbered without gaps').toBe(this.journal.events.length + 1);
        this.journal.events.push(line);
        this.learnNames(e);
        events.push(this.normalEvent(e));
      }
      if (c.checkpoint !== undefined) {
        this.journal.checkpoint = c.checkpoint;
        checkpoint = true;
        this.checkCheckpoint(c.checkpoint);
      }
      expect(c.status).toBe(summary.status);
    }
    expect(summary.seq).toBe(this.journal.events.length);
    this.checkHotState();
    return {
      summary,
      events,
      requests: requests.map((r) => this.normalRequest(r)),
      cancels: cancels.map((c) => ({ inv: this.nameOf(c.invocationId), reason: c.reason })),
      checkpoint,
    };
  }

  /**
   * Symbolic invocation ids: `node#attempt`, or `node[item]#attempt` for a foreach item
   * (`node@2[item]#attempt` in the node's second attempt, whose items have new ids).
   */
  private learnNames(e: { type: string; node?: { id: string; attempt: number; invocationId?: string; item?: number } }): void {
    const ref = e.node;
    if (ref && e.type === 'node.started') {
      this.nodeAttempts.set(ref.id, ref.attempt);
      this.agentTurns.delete(ref.id);
    }
    if (ref && e.type === 'node.agent-turn') this.agentTurns.set(ref.id, (e as unknown as { payload: { turn: number } }).payload.turn);
    if (!ref?.invocationId || this.names.has(ref.invocationId)) return;
    const nodeAttempt = this.nodeAttempts.get(ref.id) ?? 1;
    const name = this.agentCallName(ref.id, ref.attempt, ref.invocationId) ?? (ref.item === undefined ? `${ref.id}#${ref.attempt}` : `${ref.id}${nodeAttempt > 1 ? `@${nodeAttempt}` : ''}[${ref.item}]#${ref.attempt}`);
    expect(this.ids.has(name), `two invocations are both ${name}`).toBe(false);
    this.names.set(ref.invocationId, name);
    this.ids.set(name, ref.invocationId);
  }

  /**
   * The calls of an agent loop: `node#attempt/t<turn>` for a model turn, `node#attempt/t<turn>.<i>`
   * for the `i`th tool call the model asked for in that turn.
   */
  private agentCallName(nodeId: string, attempt: number, invocationId: string): string | undefined {
    const spec = (this.plan.templates[this.plan.root].template.spec.nodes as NodeLiteral[]).find((n) => n.id === nodeId);
    if (spec?.uses !== 'agent.run@1' || (spec.config as Obj | undefined)?.model === undefined) return undefined;
    const turn = this.agentTurns.get(nodeId) ?? 0;
    if (derivedId('iv', this.runId, nodeId, attempt, `turn:${turn + 1}`) === invocationId) return `${nodeId}#${attempt}/t${turn + 1}`;
    for (let i = 0; i < 64; i++) if (derivedId('iv', this.runId, nodeId, attempt, `turn:${turn}:tool:${i}`) === invocationId) return `${nodeId}#${attempt}/t${turn}.${i}`;
    return undefined;
  }

  /** Recorded replay of this run's journal (against `edited`, a changed template, when given). */
  replay(edited?: Obj, lines = this.journal.events): Obj {
    const editedPlan = edited ? compilePlan({ root: { template: edited } }, (source) => scripts.checkSyntax(source)) : undefined;
    return recorded({ mode: 'recorded', plan: this.plan, ...(editedPlan ? { editedPlan } : {}), eventTexts: [...lines] }, scripts) as Obj;
  }

  private nameOf(invocationId: string): string {
    const name = this.names.get(invocationId);
    expect(name, `invocation ${invocationId} was never announced by an event`).toBeDefined();
    return name!;
  }

  /** The id the engine uses for a symbolic name; unknown names pass through (to test unknown ids). */
  private realFact(f: FactLiteral): FactLiteral {
    if (typeof f.invocationId !== 'string') return f;
    return { ...f, invocationId: this.ids.get(f.invocationId) ?? f.invocationId };
  }

  private normalEvent(e: { type: string; runId: string; node?: { id: string; uses: string; attempt: number; invocationId?: string; item?: number }; payload: Obj }): Ev {
    expect(e.runId).toBe(this.runId);
    const ev: Ev = { type: e.type, payload: { ...e.payload } };
    if (e.node) {
      ev.node = e.node.id;
      ev.attempt = e.node.attempt;
      if (e.node.item !== undefined) ev.item = e.node.item;
      if (e.node.invocationId !== undefined) ev.inv = this.nameOf(e.node.invocationId);
      const spec = (this.plan.templates[this.plan.root].template.spec.nodes as NodeLiteral[]).find((n) => n.id === e.node!.id);
      expect(e.node.uses, `the event names the kind of node ${e.node.id}`).toBe(spec?.uses ?? 'unknown');
    }
    if (typeof ev.payload.invocationId === 'string') ev.payload.invocationId = this.names.get(ev.payload.invocationId) ?? ev.payload.invocationId;
    return ev;
  }

  private normalRequest(r: Obj): Req {
    const { invocationId, runId, nodeId, ...rest } = r;
    expect(runId).toBe(this.runId);
    return { inv: this.nameOf(invocationId as string), node: nodeId as string, ...rest } as Req;
  }

  /** The state the events fold to (what `inspect` replay answers), as JSON would carry it. */
  fold(events = this.journal.events): Obj {
    const report = inspect({ mode: 'inspect', plan: this.plan, events: events.map((l) => JSON.parse(l)), includeState: true }) as { state: unknown };
    const state = JSON.parse(JSON.stringify(report.state)) as Obj;
    if (this.metadata) {
      // A `metadata` journal has digests, not payloads: fold and checkpoint both lack them.
      state.input = null;
      for (const n of Object.values(state.nodes as Record<string, Obj>)) if (n.foreach) (n.foreach as Obj).results = [];
    }
    return state;
  }

  private checkCheckpoint(text: string): void {
    const saved = JSON.parse(text) as { seq: number };
    expect(saved.seq, 'a checkpoint is taken at the last event of its commit').toBe(this.journal.events.length);
    expect(saved, 'the checkpoint equals the fold of every event from scratch').toEqual(this.fold());
    this.foldChecks += 1;
  }

  /**
   * The state the engine keeps in memory for the next activation equals the fold. The engine
   * holds non-terminal runs in `EngineCore.hot`, and the state after its latest activation in
   * `lastState` (the only place an ended run's state is, with `checkpoint-v3`); a `metadata` run
   * keeps payloads there that its journal lacks, so it is compared as its checkpoint would hold it.
   */
  private checkHotState(): void {
    const hot = (this.core as unknown as { hot?: Map<string, { state: unknown }> }).hot;
    expect(hot instanceof Map, 'EngineCore keeps its hot runs in `hot` (update checkHotState if that moved)').toBe(true);
    const last = this.core.lastState;
    const state = hot!.get(this.runId)?.state ?? (last?.runId === this.runId ? last : undefined);
    if (state === undefined) return;
    const seen = this.metadata ? checkpointWithoutPayloads(state as RunState) : state;
    expect(JSON.parse(JSON.stringify(seen)), 'the state in memory equals the fold of every event from scratch').toEqual(this.fold());
    this.foldChecks += 1;
  }
}

/** `plan` without some of its flags, under the hash such a plan has. */
function olderPlan(plan: ExecutionPlan, without: string[]): ExecutionPlan {
  const { planHash: _hash, ...body } = plan;
  const older = { ...body, flags: body.flags.filter((f) => !without.includes(f)) };
  return { ...older, planHash: canonicalDigest(older) } as ExecutionPlan;
}

/** The validation errors of a template (none: it compiles). */
export function validationErrors(tmpl: Obj): { code: string; pointer: string; message: string }[] {
  return validateTemplate(tmpl, (source) => scripts.checkSyntax(source));
}

/** A run of `tmpl` on a fresh in-memory host. */
export function protocolRun(tmpl: Obj, options: RunOptions = {}): ProtocolRun {
  return new ProtocolRun(tmpl, options);
}

// Every test that ran a run compared the fold with the engine's state at least once.
afterEach((ctx) => {
  const runs = live.splice(0);
  if (ctx.task.result?.state === 'fail') return;
  for (const r of runs) {
    if (r.events().length === 0) continue;
    expect(r.foldChecks, `run ${r.runId}: no state was compared with the fold of its events`).toBeGreaterThan(0);
  }
});

// Builders of the protocol tests: facts, small templates and expected events, all plain object
// literals of the activation protocol (no engine types), and the matcher that compares the whole
// output of an activation. The run itself is in harness.ts, which re-exports all of this.
import { expect } from 'vitest';

/** Where the test clock starts (ms since the epoch): 2026-01-01T00:00:00Z. */
export const t0 = Date.UTC(2026, 0, 1);

export const authority = { id: 'tester', scopes: ['*'] };

export type Obj = Record<string, unknown>;

/** A fact as the host sends it; invocation ids may be written symbolically (`node#attempt`). */
export type FactLiteral = { type: string } & Obj;

/** Builders of facts: plain object literals of the activation protocol. */
export const fact = {
  runRequested: (input: unknown, extra: Obj = {}): FactLiteral => ({ type: 'run-requested', input, authority, ...extra }),
  completed: (invocation: string, output: unknown, extra: Obj = {}): FactLiteral => ({ type: 'capability-completed', invocationId: invocation, ok: true, output, ...extra }),
  failed: (invocation: string, error: { code: string; message?: string; retryable?: boolean }): FactLiteral => ({
    type: 'capability-completed',
    invocationId: invocation,
    ok: false,
    error: { message: `${error.code} happened`, ...error },
  }),
  approved: (invocation: string, by = 'alice', extra: Obj = {}): FactLiteral => fact.completed(invocation, { approved: true, by, ...extra }),
  rejected: (invocation: string, by = 'alice', extra: Obj = {}): FactLiteral => fact.completed(invocation, { approved: false, by, ...extra }),
  cancel: (reason = 'stop', by = 'operator:bob'): FactLiteral => ({ type: 'cancel-requested', reason, by }),
  resume: (extra: Obj = {}): FactLiteral => ({ type: 'resume-requested', by: 'host', ...extra }),
  restarted: (extra: Obj = {}): FactLiteral => ({ type: 'resume-requested', by: 'host', afterRestart: true, ...extra }),
  resolved: (nodeId: string, resolution: 'succeeded' | 'retry' | 'fail', extra: Obj = {}): FactLiteral => ({ type: 'outcome-resolved', nodeId, resolution, by: 'operator:bob', ...extra }),
};

/** An event as the tests compare it: no ids, times or hashes of the envelope, only what was decided. */
export interface Ev {
  type: string;
  node?: string;
  attempt?: number;
  item?: number;
  /** The invocation of the event's node reference, by its symbolic name. */
  inv?: string;
  payload: Obj;
}

/** A gateway request as the tests compare it (the run id dropped, the invocation id symbolic). */
export type Req = Obj & { inv: string; node: string; kind: string; name: string };

// ---- templates ------------------------------------------------------------------------------

export const api = 'workflow.gm-hz.dev/v1alpha1';

export type NodeLiteral = { id: string; uses: string } & Obj;
export type EdgeLiteral = { from: string; to: string; port?: string };

/** Shorthands for the nodes of small templates. */
export const node = {
  start: (id = 'start'): NodeLiteral => ({ id, uses: 'core.start@1' }),
  end: (id = 'end', inputs?: Obj): NodeLiteral => ({ id, uses: 'core.end@1', ...(inputs ? { inputs } : {}) }),
  tool: (id: string, tool: string, extra: Obj = {}): NodeLiteral => ({ id, uses: 'tool.call@1', config: { tool, ...((extra.config as Obj) ?? {}) }, ...omit(extra, 'config') }),
  agent: (id: string, agent: string, extra: Obj = {}): NodeLiteral => ({ id, uses: 'agent.run@1', config: { agent, ...((extra.config as Obj) ?? {}) }, ...omit(extra, 'config') }),
  approval: (id: string, config: Obj = {}, extra: Obj = {}): NodeLiteral => ({ id, uses: 'human.approval@1', config, ...extra }),
  condition: (id: string, operator: string, left: Obj, right?: Obj): NodeLiteral => ({ id, uses: 'core.condition@1', config: { operator }, inputs: { left, ...(right ? { right } : {}) } }),
  script: (id: string, source: string, extra: Obj = {}): NodeLiteral => ({ id, uses: 'core.script@1', config: { source }, ...extra }),
  call: (id: string, workflow: { id: string; revision: number }, extra: Obj = {}): NodeLiteral => ({ id, uses: 'workflow.call@1', config: { workflow }, ...extra }),
  foreach: (id: string, items: Obj, body: { uses: string; config: Obj }, config: Obj = {}, extra: Obj = {}): NodeLiteral => ({ id, uses: 'core.foreach@1', config: { body, ...config }, inputs: { items }, ...extra }),
};

/** Value bindings. */
export const bind = {
  input: (path = ''): Obj => ({ source: 'input', path }),
  output: (nodeId: string, path?: string): Obj => ({ source: 'output', nodeId, ...(path !== undefined ? { path } : {}) }),
  literal: (value: unknown): Obj => ({ source: 'literal', value }),
};

/**
 * A template from nodes and edges. `edges` may be written `'a -> b'` or `'a -true-> b'` (a
 * condition's port); without edges the nodes form a chain in the order given.
 */
export function template(id: string, nodes: NodeLiteral[], edges?: (string | EdgeLiteral)[], spec: Obj = {}): Obj {
  const parsed = (edges ?? nodes.slice(1).map((n, i) => `${nodes[i].id} -> ${n.id}`)).map(parseEdge);
  const requires = [...new Set(nodes.flatMap((n) => capabilityOf(n)))];
  return { apiVersion: api, kind: 'WorkflowTemplate', metadata: { id }, spec: { nodes, edges: parsed, ...(requires.length > 0 ? { requires } : {}), ...spec } };
}

function parseEdge(e: string | EdgeLiteral): EdgeLiteral {
  if (typeof e !== 'string') return e;
  const m = /^\s*(\S+)\s+-(?:(\w+)-)?>\s+(\S+)\s*$/.exec(e);
  if (!m) throw new Error(`bad edge ${JSON.stringify(e)}: write 'a -> b' or 'a -true-> b'`);
  return m[2] ? { from: m[1], to: m[3], port: m[2] } : { from: m[1], to: m[3] };
}

function capabilityOf(n: NodeLiteral): string[] {
  const c = (n.config ?? {}) as Obj;
  switch (n.uses) {
    case 'tool.call@1':
      return [`tool:${c.tool}`];
    case 'agent.run@1':
      if (c.model !== undefined) return [`model:${c.model}`, ...((c.tools ?? []) as string[]).map((t) => `tool:${t}`), ...((c.skills ?? []) as string[]).map((k) => `skill:${k}`)];
      return [`agent:${c.agent}`];
    case 'human.approval@1':
      return ['approval'];
    case 'workflow.call@1':
      return [`workflow:${(c.workflow as Obj).id}`];
    case 'core.foreach@1': {
      const body = c.body as { uses: string; config: Obj };
      return capabilityOf({ id: n.id, ...body });
    }
    default:
      return [];
  }
}

function omit(o: Obj, key: string): Obj {
  const { [key]: _drop, ...rest } = o;
  return rest;
}
// ---- expectations ---------------------------------------------------------------------------

/** Shorthands for expected events. `node` events carry `attempt` 1 unless told. */
export const ev = {
  started: (): Ev => ({ type: 'run.started', payload: {} }),
  nodeStarted: (id: string, payload: Obj = {}, ref: Partial<Ev> = {}): Ev => ({ type: 'node.started', node: id, attempt: 1, payload, ...ref }),
  committed: (id: string, output: unknown, ref: Partial<Ev> = {}): Ev => ({ type: 'node.output-committed', node: id, attempt: 1, payload: { output }, ...ref }),
  taken: (edge: number, from: string, to: string, port?: string): Ev => ({ type: 'edge.taken', payload: { edge, from, to, ...(port !== undefined ? { port } : {}) } }),
  skippedEdge: (edge: number, from: string, to: string, port?: string): Ev => ({ type: 'edge.skipped', payload: { edge, from, to, ...(port !== undefined ? { port } : {}) } }),
  nodeSkipped: (id: string): Ev => ({ type: 'node.skipped', node: id, attempt: 0, payload: {} }),
  requested: (inv: string, payload: Obj): Ev => ({ type: 'capability.requested', ...refOf(inv), payload: { invocationId: inv, ...payload } }),
  completedCall: (inv: string, output: unknown): Ev => ({ type: 'capability.completed', ...refOf(inv), payload: { invocationId: inv, ok: true, output } }),
  failedCall: (inv: string, error: Obj): Ev => ({ type: 'capability.completed', ...refOf(inv), payload: { invocationId: inv, ok: false, error } }),
  cancelledCall: (inv: string, reason: string): Ev => ({ type: 'capability.cancelled', ...refOf(inv), payload: { invocationId: inv, reason } }),
  nodeFailed: (id: string, error: Obj, attempt = 1): Ev => ({ type: 'node.failed', node: id, attempt, payload: { error } }),
  runCompleted: (output: unknown): Ev => ({ type: 'run.completed', payload: { output } }),
  runFailed: (error: Obj): Ev => ({ type: 'run.failed', payload: { error } }),
  paused: (reason: string): Ev => ({ type: 'run.paused', payload: { reason } }),
  checkpoint: (): Ev => ({ type: 'checkpoint.committed', payload: { checkpointVersion: 1 } }),
};

/**
 * The node reference of an event about a symbolic invocation (`node#2`, `node[3]#1`, `node@2[3]#1`,
 * and an agent loop's `node#1/t2` model turn and `node#1/t2.0` tool call).
 */
export function refOf(inv: string): Pick<Ev, 'node' | 'attempt' | 'item' | 'inv'> {
  const m = /^([^[#@]+)(?:@\d+)?(?:\[(\d+)\])?#(\d+)(?:\/t\d+(?:\.\d+)?)?$/.exec(inv);
  if (!m) throw new Error(`bad invocation name ${inv}`);
  return { node: m[1], attempt: Number(m[3]), ...(m[2] !== undefined ? { item: Number(m[2]) } : {}), inv };
}

/** The whole list of events, in order: each with its type, node reference and exact payload. */
export function expectEvents(actual: Ev[], expected: Ev[]): void {
  const norm = (e: Ev): Ev => {
    const out: Ev = { type: e.type, payload: e.payload };
    for (const k of ['node', 'attempt', 'item', 'inv'] as const) if (e[k] !== undefined) (out as unknown as Obj)[k] = e[k];
    return out;
  };
  expect(actual.map(norm)).toEqual(expected.map(norm));
}

/** The run failed because node `id` failed with `error`. */
export function nodeFailure(id: string, error: Obj): Obj {
  return { code: 'node.failed', message: `node ${id} failed: ${error.code}: ${error.message}`, detail: { nodeId: id, error } };
}

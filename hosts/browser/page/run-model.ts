// What the page shows about a run. The timeline and each node's attempts are read from the
// export's events in one pass (they are the journal, shown as it is). What the run waits for, how
// it ended and the node states come from the engine: the projection of the component's `inspect`
// replay; until it answers, only the export's status is known.
import type { EventEnvelope, RunProjection } from '../../core/types.js';
import type { RunExport } from '../journal.js';
import { addAgentEvent, type AgentView } from './agent-turns.js';

export type Highlight = 'unknown' | 'approval' | 'failure' | undefined;

export interface NodeSpec {
  id: string;
  uses: string;
  config?: Record<string, unknown>;
}

export interface EdgeSpec {
  index: number;
  from: string;
  to: string;
  port?: string;
  status?: 'taken' | 'skipped';
}

export interface Attempt {
  attempt: number;
  item?: number;
  /** Events of this attempt, by seq. */
  seqs: number[];
  input?: unknown;
  invocationId?: string;
  capability?: string;
  effect?: string;
  output?: unknown;
  error?: unknown;
  outcome?: string;
}

export interface NodeView {
  spec: NodeSpec;
  status: string;
  attempt: number;
  output?: unknown;
  error?: unknown;
  attempts: Attempt[];
  highlight: Highlight;
  events: number;
  /** An agent loop's turns, tool calls and usage. */
  agent?: AgentView;
}

export interface RunModel {
  exported: RunExport;
  runId: string;
  workflowId: string;
  templateKey: string;
  nodes: Map<string, NodeView>;
  edges: EdgeSpec[];
  outcome: { status: string; pausedReason?: string; output?: unknown; error?: unknown };
  /** The engine's projection of the run (waiting approvals, calls in flight, unknown outcomes), from `inspect`. */
  projection?: RunProjection;
  /** Seqs of events to point out in the timeline. */
  highlights: Map<number, Exclude<Highlight, undefined>>;
}

const statusOfEvent: Record<string, string> = {
  'node.started': 'running',
  'node.resumed': 'running',
  'node.waiting': 'waiting',
  'node.retry-scheduled': 'retry-wait',
  'node.needs-attention': 'needs-attention',
  'node.output-committed': 'completed',
  'node.failed': 'failed',
  'node.skipped': 'skipped',
  'node.cancelled': 'cancelled',
};

/** The highlight class of one event: unknown outcomes, approvals, failures. */
export function highlightOf(e: EventEnvelope): Highlight {
  if (e.type === 'node.needs-attention' || e.type === 'capability.abandoned') return 'unknown';
  if ((e.type === 'capability.requested' && e.payload.kind === 'approval') || (e.type === 'node.waiting' && e.payload.reason === 'approval') || e.type === 'node.resolved') return 'approval';
  if (e.type === 'node.failed' || e.type === 'run.failed' || e.type === 'node.item-failed' || (e.type === 'capability.completed' && e.payload.ok === false)) return 'failure';
  if ((e.type === 'node.agent-tool-result' && e.payload.error !== undefined) || e.type === 'node.agent-answer-invalid') return 'failure';
  return undefined;
}

const rank: Record<Exclude<Highlight, undefined>, number> = { unknown: 3, approval: 2, failure: 1 };

export function buildRunModel(exported: RunExport): RunModel {
  const plan = exported.plan;
  const root = plan.templates[plan.root]?.template ?? { spec: { nodes: [], edges: [] } };
  const specNodes: NodeSpec[] = root.spec?.nodes ?? [];
  const nodes = new Map<string, NodeView>();
  for (const n of specNodes) nodes.set(n.id, { spec: n, status: 'pending', attempt: 0, attempts: [], highlight: undefined, events: 0 });
  const edges: EdgeSpec[] = (root.spec?.edges ?? []).map((e: any, index: number) => ({ index, from: e.from, to: e.to, ...(e.port !== undefined ? { port: String(e.port) } : {}) }));
  const highlights = new Map<number, Exclude<Highlight, undefined>>();
  const outcome: RunModel['outcome'] = { status: exported.run.status };
  const attemptIndex = new Map<string, Attempt>();

  for (const e of exported.events) {
    const p = e.payload ?? {};
    const h = highlightOf(e);
    if (h) highlights.set(e.seq, h);
    if (e.type === 'edge.taken' || e.type === 'edge.skipped') {
      const edge = edges[p.edge as number];
      if (edge) edge.status = e.type === 'edge.taken' ? 'taken' : 'skipped';
    }
    if (!e.node) continue;
    const view = nodes.get(e.node.id);
    if (!view) continue;
    view.events += 1;
    if (h && (!view.highlight || rank[h] > rank[view.highlight])) view.highlight = h;
    if (e.node.item === undefined && statusOfEvent[e.type]) view.status = statusOfEvent[e.type];
    view.attempt = Math.max(view.attempt, e.node.attempt ?? 0);
    if (e.type === 'node.output-committed' && e.node.item === undefined) view.output = p.output;
    if (e.type === 'node.failed') view.error = p.error;
    if (e.type === 'node.skipped') continue;
    if (e.type.startsWith('node.agent-')) view.agent = addAgentEvent(view.agent, e);
    // An agent loop makes many calls in one attempt: each is listed on its own.
    const call = view.spec.config?.model !== undefined && e.node.invocationId !== undefined ? e.node.invocationId : '';
    const key = `${e.node.id}\u0000${e.node.item ?? ''}\u0000${e.node.attempt}\u0000${call}`;
    let a = attemptIndex.get(key);
    if (!a) {
      a = { attempt: e.node.attempt, ...(e.node.item !== undefined ? { item: e.node.item } : {}), seqs: [] };
      attemptIndex.set(key, a);
      view.attempts.push(a);
    }
    a.seqs.push(e.seq);
    if (e.type === 'capability.requested') {
      a.input = p.input;
      a.invocationId = p.invocationId as string;
      a.capability = `${p.kind}:${p.name}`;
      a.effect = p.effect as string;
    } else if (e.type === 'capability.completed' || e.type === 'capability.late') {
      if (p.ok) a.output = p.output;
      else a.error = p.error;
      a.outcome = p.ok ? 'succeeded' : 'failed';
    } else if (e.type === 'node.agent-tool-result' && p.refused) {
      // Refused by the allow-lists or the authority: never requested, so named here.
      a.invocationId = e.node.invocationId;
      a.capability = `tool:${p.toolName}`;
      a.error = p.error;
      a.outcome = 'refused';
    } else if (e.type === 'capability.abandoned') a.outcome = 'unknown (abandoned)';
    else if (e.type === 'node.needs-attention') a.outcome = 'unknown (needs attention)';
    else if (e.type === 'node.output-committed' || e.type === 'node.item-committed') a.output = p.output;
    else if (e.type === 'node.failed' || e.type === 'node.item-failed') a.error = p.error;
  }
  const first = exported.events[0];
  return {
    exported,
    runId: exported.run.runId,
    workflowId: first?.workflow?.id ?? root.metadata?.id ?? '?',
    templateKey: plan.root,
    nodes,
    edges,
    outcome,
    highlights,
  };
}

/** Takes node states, outputs, the run outcome and its projection from the component's inspect report. */
export function applyInspect(model: RunModel, report: Record<string, any>): void {
  for (const [id, n] of Object.entries<any>(report.nodes ?? {})) {
    const view = model.nodes.get(id);
    if (!view) continue;
    view.status = n.status;
    view.attempt = n.attempt;
    if (n.output !== undefined) view.output = n.output;
    if (n.error !== undefined) view.error = n.error;
  }
  if (report.outcome && typeof report.outcome === 'object') model.outcome = { ...report.outcome };
  if (report.projection && typeof report.projection === 'object') model.projection = report.projection as RunProjection;
}

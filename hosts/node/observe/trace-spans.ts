// Spans of one run, built from its committed events in seq order: a pure fold of the journal.
// The same events give the same spans (ids from hosts/core/trace-context.ts, times from each
// event's `occurredAt`), so a process that exports a run again after a restart sends the spans it
// sent before, with the same ids.
//
//   run span   run.accepted -> run.completed | run.failed | run.cancelled
//   node span  node.started -> node.output-committed | node.failed | node.retry-scheduled |
//              node.resolved | node.skipped | node.cancelled          (one per attempt)
//   call span  capability.requested -> capability.completed | capability.cancelled |
//              capability.abandoned                                    (one per invocation id)
//
// Pauses, waits and needs-attention are span events of the run or node span. A span still open
// when the run ends is ended with the run.
import { RunTraceIds, traceparentOfCorrelation, type Sha256 } from '../../core/trace-context.js';
import { telemetryLimits } from '../limits.js';

export type SpanAttributes = Record<string, string | number | boolean>;

/** A finished span, independent of any telemetry SDK. */
export interface SpanRecord {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: 'internal' | 'client';
  startMs: number;
  endMs: number;
  attributes: SpanAttributes;
  /** `error` when the run, node or call failed. */
  status: 'ok' | 'error' | 'unset';
  statusMessage?: string;
  events: { name: string; timeMs: number; attributes: SpanAttributes }[];
}

/** The parts of a journal event a span needs. */
export interface TraceEvent {
  seq: number;
  type: string;
  occurredAt: string;
  runId: string;
  workflow?: { id?: string; revision?: number; semanticHash?: string; engineVersion?: string };
  node?: { id: string; uses: string; attempt: number; invocationId?: string; item?: number };
  correlation?: unknown;
  origin?: { actor?: string; activation?: number };
  payload?: Record<string, unknown>;
}

interface OpenSpan {
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: SpanRecord['kind'];
  startMs: number;
  attributes: SpanAttributes;
  events: SpanRecord['events'];
}

function timeOf(event: TraceEvent): number {
  const ms = Date.parse(event.occurredAt);
  return Number.isFinite(ms) ? ms : 0;
}

function errorText(payload: Record<string, unknown> | undefined): string | undefined {
  const error = payload?.error as { code?: unknown; message?: unknown } | undefined;
  if (!error || typeof error !== 'object') return undefined;
  return `${String(error.code ?? 'error')}: ${String(error.message ?? '')}`.slice(0, 500);
}

function addEvent(span: OpenSpan | undefined, name: string, timeMs: number, attributes: SpanAttributes = {}): void {
  if (!span || span.events.length >= telemetryLimits.spanEventsMax) return;
  span.events.push({ name, timeMs, attributes });
}

/** The spans of one run, fed its events in seq order. */
export class RunSpanBuilder {
  private ids: RunTraceIds | undefined;
  private run: OpenSpan | undefined;
  private readonly nodes = new Map<string, OpenSpan>();
  private readonly calls = new Map<string, OpenSpan>();
  /** The seq of the last event taken. */
  seq = 0;
  ended = false;

  constructor(
    readonly runId: string,
    private readonly sha256: Sha256,
  ) {}

  private traceIds(event: TraceEvent): RunTraceIds {
    this.ids ??= new RunTraceIds(this.runId, traceparentOfCorrelation(event.correlation), this.sha256);
    return this.ids;
  }

  private finish(span: OpenSpan, endMs: number, status: SpanRecord['status'], statusMessage?: string, extra: SpanAttributes = {}): SpanRecord {
    return {
      traceId: this.ids!.traceId,
      spanId: span.spanId,
      ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
      name: span.name,
      kind: span.kind,
      startMs: span.startMs,
      endMs: Math.max(endMs, span.startMs),
      attributes: { ...span.attributes, ...extra },
      status,
      ...(statusMessage ? { statusMessage } : {}),
      events: span.events,
    };
  }

  /** Takes the next event; returns the spans it ended. */
  add(event: TraceEvent): SpanRecord[] {
    if (event.seq !== this.seq + 1) throw new Error(`spans of run ${this.runId}: seq ${event.seq} after ${this.seq}`);
    this.seq = event.seq;
    if (this.ended) return [];
    const ids = this.traceIds(event);
    const at = timeOf(event);
    const payload = event.payload ?? {};
    const node = event.node;
    const nodeKey = node ? `${node.id}\n${node.attempt}` : '';
    const out: SpanRecord[] = [];
    const endNode = (status: SpanRecord['status'], message?: string, extra?: SpanAttributes) => {
      const span = this.nodes.get(nodeKey);
      if (!span) return;
      this.nodes.delete(nodeKey);
      out.push(this.finish(span, at, status, message, extra));
    };
    const endCall = (status: SpanRecord['status'], message?: string, extra?: SpanAttributes) => {
      const id = String(payload.invocationId ?? '');
      const span = this.calls.get(id);
      if (!span) return;
      this.calls.delete(id);
      out.push(this.finish(span, at, status, message, extra));
    };
    switch (event.type) {
      case 'run.accepted': {
        const w = event.workflow ?? {};
        this.run = {
          spanId: ids.runSpanId,
          parentSpanId: ids.parentSpanId,
          name: `run ${w.id ?? ''}`.trim(),
          kind: 'internal',
          startMs: at,
          attributes: {
            'workflow.run.id': this.runId,
            ...(w.id !== undefined ? { 'workflow.id': w.id } : {}),
            ...(w.revision !== undefined ? { 'workflow.revision': w.revision } : {}),
            ...(w.semanticHash !== undefined ? { 'workflow.semantic_hash': w.semanticHash } : {}),
            ...(w.engineVersion !== undefined ? { 'workflow.engine_version': w.engineVersion } : {}),
            ...(event.origin?.actor !== undefined ? { 'workflow.origin.actor': event.origin.actor } : {}),
            ...(typeof payload.parentRunId === 'string' ? { 'workflow.parent_run.id': payload.parentRunId } : {}),
          },
          events: [],
        };
        break;
      }
      case 'run.paused':
        addEvent(this.run, 'run.paused', at, { reason: String(payload.reason ?? '') });
        break;
      case 'run.resumed':
        addEvent(this.run, 'run.resumed', at, typeof payload.by === 'string' ? { by: payload.by } : {});
        break;
      case 'run.completed':
      case 'run.failed':
      case 'run.cancelled': {
        const status = event.type === 'run.completed' ? 'ok' : 'error';
        for (const span of [...this.calls.values(), ...this.nodes.values()]) out.push(this.finish(span, at, 'unset', undefined, { 'workflow.ended_with_run': true }));
        this.calls.clear();
        this.nodes.clear();
        if (this.run) out.push(this.finish(this.run, at, status, event.type === 'run.failed' ? errorText(payload) : event.type === 'run.cancelled' ? `cancelled: ${String(payload.reason ?? '')}` : undefined, { 'workflow.run.status': event.type.slice(4) }));
        this.run = undefined;
        this.ended = true;
        break;
      }
      case 'node.started':
        if (!node || this.nodes.has(nodeKey)) break;
        this.nodes.set(nodeKey, {
          spanId: ids.nodeSpanId(node.id, node.attempt),
          parentSpanId: ids.runSpanId,
          name: `node ${node.id}`,
          kind: 'internal',
          startMs: at,
          attributes: { 'workflow.run.id': this.runId, 'workflow.node.id': node.id, 'workflow.node.uses': node.uses, 'workflow.node.attempt': node.attempt },
          events: [],
        });
        break;
      case 'node.output-committed':
        endNode('ok');
        break;
      case 'node.resolved':
        endNode(payload.resolution === 'fail' ? 'error' : 'ok', undefined, { 'workflow.node.resolution': String(payload.resolution ?? '') });
        break;
      case 'node.skipped':
        endNode('unset', undefined, { 'workflow.node.skipped': true });
        break;
      case 'node.failed':
        endNode('error', errorText(payload));
        break;
      case 'node.retry-scheduled':
        endNode('error', errorText(payload), { 'workflow.node.retry_scheduled': true });
        break;
      case 'node.cancelled':
        endNode('error', `cancelled: ${String(payload.reason ?? '')}`);
        break;
      case 'node.waiting':
      case 'node.needs-attention':
      case 'node.resumed':
        addEvent(this.nodes.get(nodeKey), event.type, at);
        break;
      case 'capability.requested': {
        const invocationId = String(payload.invocationId ?? '');
        if (!node || this.calls.has(invocationId)) {
          if (payload.reissued) addEvent(this.calls.get(invocationId), 'capability.reissued', at);
          break;
        }
        this.calls.set(invocationId, {
          spanId: ids.callSpanId(invocationId),
          parentSpanId: ids.nodeSpanId(node.id, node.attempt),
          name: `${String(payload.kind ?? 'call')} ${String(payload.name ?? '')}`.trim(),
          kind: 'client',
          startMs: at,
          attributes: {
            'workflow.run.id': this.runId,
            'workflow.node.id': node.id,
            'workflow.invocation.id': invocationId,
            'workflow.capability.kind': String(payload.kind ?? ''),
            'workflow.capability.name': String(payload.name ?? ''),
            'workflow.capability.effect': String(payload.effect ?? ''),
            ...(typeof payload.item === 'number' ? { 'workflow.item': payload.item } : {}),
          },
          events: [],
        });
        break;
      }
      case 'capability.completed':
        if (payload.ok === false) endCall('error', errorText(payload));
        else endCall('ok');
        break;
      case 'capability.cancelled':
      case 'capability.abandoned':
        endCall('error', `${event.type.slice(11)}: ${String(payload.reason ?? '')}`);
        break;
      default:
        break;
    }
    return out;
  }
}

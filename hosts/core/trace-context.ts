// W3C trace context of a run (https://www.w3.org/TR/trace-context/): the `traceparent` a launch
// was given is recorded in the run's correlation (`correlation.traceparent`, on every event of the
// run); every other id is a pure function of the run id and the journal, so a trace exported twice
// (after a restart) has the same trace and span ids.
//
//   trace id       the launch's traceparent's trace id; without one, the first 16 bytes of
//                  sha256("trace\n" + runId)
//   run span       sha256("run\n" + runId), first 8 bytes; its parent is the launch's span
//   node span      sha256("node\n" + runId + "\n" + nodeId + "\n" + attempt)
//   call span      sha256("call\n" + runId + "\n" + invocationId); a tool or agent gets
//                  `traceparent` = 00-<trace id>-<call span>-01 and makes its own spans children of it
//
// Platform-neutral: the caller hands in its `sha256:<hex>` function.
import { HostError } from './host-error.js';

export interface TraceContext {
  traceId: string;
  spanId: string;
  flags: string;
}

export type Sha256 = (text: string) => string;

const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** A parsed `traceparent`, or `undefined` when the text is not a valid one (W3C §3.2). */
export function parseTraceparent(text: unknown): TraceContext | undefined {
  if (typeof text !== 'string' || text.length > 512) return undefined;
  const m = traceparentPattern.exec(text.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags };
}

/** Refuses a `traceparent` that is not a valid W3C one (`launch.bad-traceparent`). */
export function assertTraceparent(text: unknown): string {
  const parsed = parseTraceparent(text);
  if (!parsed) throw new HostError('launch.bad-traceparent', 'traceparent must be a W3C trace context: 00-<32 hex>-<16 hex>-<2 hex>, not all zeros');
  return formatTraceparent(parsed);
}

export function formatTraceparent(c: TraceContext): string {
  return `00-${c.traceId}-${c.spanId}-${c.flags}`;
}

function hexOf(sha256: Sha256, text: string, hexChars: number): string {
  const digest = sha256(text);
  const hex = digest.startsWith('sha256:') ? digest.slice(7) : digest;
  return hex.slice(0, hexChars);
}

/** The traceparent a run's correlation records, if any. */
export function traceparentOfCorrelation(correlation: unknown): string | undefined {
  if (correlation === null || typeof correlation !== 'object' || Array.isArray(correlation)) return undefined;
  const t = (correlation as { traceparent?: unknown }).traceparent;
  return parseTraceparent(t) ? (t as string) : undefined;
}

/** The ids of one run's trace. */
export class RunTraceIds {
  readonly traceId: string;
  /** The launch's span (the run span's parent), when the launch had a traceparent. */
  readonly parentSpanId: string | undefined;
  readonly flags: string;
  readonly runSpanId: string;

  constructor(
    readonly runId: string,
    traceparent: string | undefined,
    private readonly sha256: Sha256,
  ) {
    const given = parseTraceparent(traceparent);
    this.traceId = given?.traceId ?? hexOf(sha256, `trace\n${runId}`, 32);
    this.parentSpanId = given?.spanId;
    this.flags = given?.flags ?? '01';
    this.runSpanId = hexOf(sha256, `run\n${runId}`, 16);
  }

  nodeSpanId(nodeId: string, attempt: number): string {
    return hexOf(this.sha256, `node\n${this.runId}\n${nodeId}\n${attempt}`, 16);
  }

  callSpanId(invocationId: string): string {
    return hexOf(this.sha256, `call\n${this.runId}\n${invocationId}`, 16);
  }

  /** What a tool or agent is handed: the call's span as the parent of its own spans. */
  callTraceparent(invocationId: string): string {
    return formatTraceparent({ traceId: this.traceId, spanId: this.callSpanId(invocationId), flags: this.flags });
  }
}

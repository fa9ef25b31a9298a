// The OTLP/HTTP side of the trace exporter (JSON over HTTP, `@opentelemetry/exporter-trace-otlp-http`).
// Loaded with `import()` only when a runtime exports traces, so a process that does not export
// never loads the OpenTelemetry packages.
import { SpanKind, SpanStatusCode, TraceFlags, type HrTime } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { SpanRecord } from './trace-spans.js';

export interface SpanSink {
  /** Sends spans; resolves with the error when the collector did not take them. Never rejects. */
  export(spans: SpanRecord[]): Promise<Error | undefined>;
  shutdown(): Promise<void>;
}

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

const statusCodes = { ok: SpanStatusCode.OK, error: SpanStatusCode.ERROR, unset: SpanStatusCode.UNSET } as const;

export function createOtlpSink(options: { url: string; headers?: Record<string, string>; serviceName: string; scopeVersion: string; timeoutMs: number }): SpanSink {
  const exporter = new OTLPTraceExporter({ url: options.url, timeoutMillis: options.timeoutMs, concurrencyLimit: 1, ...(options.headers ? { headers: options.headers } : {}) });
  const resource = resourceFromAttributes({ 'service.name': options.serviceName });
  const scope = { name: '@gm-hz/agent-dag-workflow', version: options.scopeVersion };
  const readable = (s: SpanRecord): ReadableSpan => {
    const context = { traceId: s.traceId, spanId: s.spanId, traceFlags: TraceFlags.SAMPLED };
    return {
      name: s.name,
      kind: s.kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL,
      spanContext: () => context,
      ...(s.parentSpanId ? { parentSpanContext: { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: false } } : {}),
      startTime: hrTime(s.startMs),
      endTime: hrTime(s.endMs),
      duration: hrTime(s.endMs - s.startMs),
      status: { code: statusCodes[s.status], ...(s.statusMessage ? { message: s.statusMessage } : {}) },
      attributes: s.attributes,
      links: [],
      events: s.events.map((e) => ({ name: e.name, time: hrTime(e.timeMs), attributes: e.attributes })),
      ended: true,
      resource,
      instrumentationScope: scope,
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    };
  };
  return {
    export: (spans) =>
      new Promise((resolve) => {
        try {
          exporter.export(spans.map(readable), (result) => resolve(result.code === 0 ? undefined : (result.error ?? new Error('the collector did not take the spans'))));
        } catch (err) {
          resolve(err as Error);
        }
      }),
    shutdown: () => exporter.shutdown().catch(() => undefined),
  };
}

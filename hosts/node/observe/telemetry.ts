/**
 * OpenTelemetry export of runs: spans built from committed events, off the commit path.
 *
 * The kernel tells the exporter which run committed (`Kernel.onCommit`, called after the commit is
 * durable); the exporter notes the run and, on a later turn of the event loop, reads the run's new
 * events from the journal, folds them into spans (trace-spans.ts) and puts the finished spans in a
 * bounded queue. One export request at a time takes up to a batch from the queue to the collector.
 * Nothing waits on the collector: a queue that is full drops the span and counts it, a failed
 * export drops its batch and counts it, and a close sends what is queued for a bounded time only.
 * A slow, failing or dead collector therefore never slows or fails a run.
 *
 * The journal is the authority, the spans a projection: a process that restarts reads each run it
 * commits again from seq 0 and sends the same spans (same ids) again.
 */
import { readFileSync } from 'node:fs';
import type { Kernel } from '../../core/kernel.js';

/** What the exporter follows of the kernel: every commit of this process, once durable. */
export type CommitFeed = Pick<Kernel, 'onCommit'>;
import type { JournalStore } from '../../core/store.js';
import { sha256Digest } from '../../shared/digest.js';
import { WorkflowError } from '../sdk/errors.js';
import { telemetryLimits } from '../limits.js';
import type { SpanSink } from './otlp-sink.js';
import { RunSpanBuilder, type SpanRecord, type TraceEvent } from './trace-spans.js';
import { coalesced } from './coalesce.js';

export interface TelemetryOptions {
  /**
   * The OTLP/HTTP endpoint: a base URL such as `http://127.0.0.1:4318` (as
   * `OTEL_EXPORTER_OTLP_ENDPOINT`; `/v1/traces` is added) or the full traces URL ending in `/v1/traces`.
   */
  otlpUrl: string;
  /** Headers of every export request (an API key of a hosted collector). */
  headers?: Record<string, string>;
  /** `service.name` of the exported resource (default `agent-workflow`). */
  serviceName?: string;
}

/** What the exporter did since the runtime opened. */
export interface TelemetryStats {
  /** Spans the collector took. */
  exportedSpans: number;
  /** Spans dropped because the queue was full (or the runtime closed before they were sent). */
  droppedSpans: number;
  /** Spans of export requests that failed. */
  failedSpans: number;
  failedExports: number;
  /** Spans waiting in the queue now. */
  queuedSpans: number;
  /** The last export failure's message. */
  lastError?: string;
}

/** The traces URL of an endpoint given as a base URL or a full `/v1/traces` URL. */
export function tracesUrlOf(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new WorkflowError('telemetry.bad-url', `the OTLP endpoint ${JSON.stringify(endpoint)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new WorkflowError('telemetry.bad-url', `the OTLP endpoint must be http or https, not ${url.protocol}`);
  if (url.pathname.endsWith('/v1/traces')) return url.toString();
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.toString();
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export class TraceExporter {
  private readonly runs = new Map<string, RunSpanBuilder>();
  private readonly dirty = new Set<string>();
  private readonly queue: SpanRecord[] = [];
  private readonly counts = { exportedSpans: 0, droppedSpans: 0, failedSpans: 0, failedExports: 0 };
  private lastError: string | undefined;
  private readonly readSoon = coalesced(() => void this.readDirty());
  private reading: Promise<void> | undefined;
  private exporting: Promise<void> | undefined;
  private exportTimer: ReturnType<typeof setTimeout> | undefined;
  private notBefore = 0;
  /** Spans of the export request in flight. */
  private inFlightSpans = 0;
  /** The close stopped waiting for the request in flight: its spans were counted as dropped. */
  private gaveUp = false;
  private closed = false;
  private readonly unsubscribe: () => void;
  private readonly sha256 = (text: string) => sha256Digest(text);

  private constructor(
    private readonly store: JournalStore,
    kernel: CommitFeed,
    private readonly sink: SpanSink,
  ) {
    this.unsubscribe = kernel.onCommit((runId) => this.committed(runId));
  }

  /** Loads the OTLP exporter (only now) and follows the kernel's commits. */
  static async start(store: JournalStore, kernel: CommitFeed, options: TelemetryOptions): Promise<TraceExporter> {
    const url = tracesUrlOf(options.otlpUrl);
    const { createOtlpSink } = await import('./otlp-sink.js');
    const sink = createOtlpSink({ url, ...(options.headers ? { headers: options.headers } : {}), serviceName: options.serviceName ?? 'agent-workflow', scopeVersion: packageVersion(), timeoutMs: telemetryLimits.exportTimeoutMs });
    return new TraceExporter(store, kernel, sink);
  }

  stats(): TelemetryStats {
    return { ...this.counts, queuedSpans: this.queue.length, ...(this.lastError ? { lastError: this.lastError } : {}) };
  }

  /** On the commit loop: note the run, read it later. */
  private committed(runId: string): void {
    if (this.closed) return;
    this.dirty.add(runId);
    this.readSoon();
  }

  private readDirty(): Promise<void> {
    if (this.reading) return this.reading;
    this.reading = (async () => {
      try {
        while (this.dirty.size > 0) {
          const [runId] = this.dirty;
          this.dirty.delete(runId);
          try {
            await this.readRun(runId);
          } catch (err) {
            // The journal could not be read: this run's spans start again from seq 0 next time.
            this.runs.delete(runId);
            this.lastError = `reading run ${runId}: ${(err as Error).message}`;
          }
        }
      } finally {
        this.reading = undefined;
      }
    })();
    return this.reading;
  }

  private builderOf(runId: string): RunSpanBuilder {
    let builder = this.runs.get(runId);
    if (builder) {
      // Most recently used last: the first entry is the one forgotten when there are too many.
      this.runs.delete(runId);
      this.runs.set(runId, builder);
      return builder;
    }
    builder = new RunSpanBuilder(runId, this.sha256);
    this.runs.set(runId, builder);
    if (this.runs.size > telemetryLimits.runsTrackedMax) {
      const [oldest] = this.runs.keys();
      this.runs.delete(oldest);
    }
    return builder;
  }

  private async readRun(runId: string): Promise<void> {
    const builder = this.builderOf(runId);
    for (;;) {
      const page = await this.store.readEvents(runId, builder.seq, telemetryLimits.readPageEventsMax);
      for (const line of page.events) {
        for (const span of builder.add(JSON.parse(line) as TraceEvent)) this.enqueue(span);
      }
      if (!page.more || page.events.length === 0) break;
    }
    if (builder.ended) this.runs.delete(runId);
  }

  private enqueue(span: SpanRecord): void {
    if (this.queue.length >= telemetryLimits.queueSpansMax) {
      this.counts.droppedSpans++;
      return;
    }
    this.queue.push(span);
    this.scheduleExport();
  }

  private scheduleExport(): void {
    if (this.exporting || this.exportTimer || this.queue.length === 0) return;
    const delay = Math.max(telemetryLimits.exportDelayMs, this.notBefore - Date.now());
    this.exportTimer = setTimeout(() => {
      this.exportTimer = undefined;
      void this.exportBatch();
    }, delay);
    this.exportTimer.unref();
  }

  private exportBatch(): Promise<void> {
    if (this.exporting) return this.exporting;
    const batch = this.queue.splice(0, telemetryLimits.exportBatchSpansMax);
    if (batch.length === 0) return Promise.resolve();
    this.inFlightSpans = batch.length;
    this.exporting = (async () => {
      const error = await this.sink.export(batch);
      this.inFlightSpans = 0;
      if (this.gaveUp) return;
      if (error) {
        this.counts.failedExports++;
        this.counts.failedSpans += batch.length;
        this.lastError = error.message;
        this.notBefore = Date.now() + telemetryLimits.retryDelayMs;
      } else {
        this.counts.exportedSpans += batch.length;
        this.notBefore = 0;
      }
    })().finally(() => {
      this.exporting = undefined;
      if (!this.closed) this.scheduleExport();
    });
    return this.exporting;
  }

  /**
   * Stops following commits, reads what was committed, and sends what is queued for at most
   * `closeFlushMs`; what is left then is dropped (and counted). Call before the store closes.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    if (this.exportTimer) clearTimeout(this.exportTimer);
    this.exportTimer = undefined;
    const deadline = Date.now() + telemetryLimits.closeFlushMs;
    const flush = async () => {
      await this.readDirty();
      if (this.exporting) await this.exporting;
      while (this.queue.length > 0 && Date.now() < deadline) await this.exportBatch();
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([flush(), new Promise<void>((resolve) => (timer = setTimeout(resolve, telemetryLimits.closeFlushMs)))]);
    clearTimeout(timer);
    this.gaveUp = true;
    this.counts.droppedSpans += this.queue.length + this.inFlightSpans;
    this.queue.length = 0;
    this.runs.clear();
    let shutdownTimer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.sink.shutdown(), new Promise<void>((resolve) => (shutdownTimer = setTimeout(resolve, telemetryLimits.closeFlushMs)))]);
    clearTimeout(shutdownTimer);
  }
}

// The router host's journal store: the checksummed append-only file journal (file-journal.ts),
// plus a thin wrapper that measures how long each group commit takes (write + fdatasync).
import type { CommitEntry, CommitRejection, EventPage, JournalStore, RunRecord, RunTail } from '../core/store.js';
import type { RunProjection } from '../core/types.js';
import type { CompactionReport } from './compaction.js';
import { FileJournalStore } from './file-journal.js';
import { commitSamplesMax } from './limits.js';

export { FileJournalStore, type FileJournalOptions, type OpenReport } from './file-journal.js';

export interface LatencySummary {
  count: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

/** Keeps the last `commitSamplesMax` commit durations (a ring, so memory stays bounded). */
export class LatencyRing {
  private readonly samples = new Float64Array(commitSamplesMax);
  private next = 0;
  private total = 0;

  add(ms: number): void {
    this.samples[this.next] = ms;
    this.next = (this.next + 1) % this.samples.length;
    this.total++;
  }

  summary(): LatencySummary {
    const n = Math.min(this.total, this.samples.length);
    if (n === 0) return { count: 0, p50Ms: 0, p95Ms: 0, maxMs: 0 };
    const sorted = Array.from(this.samples.subarray(0, n)).sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(n - 1, Math.ceil(q * n) - 1)];
    return { count: this.total, p50Ms: at(0.5), p95Ms: at(0.95), maxMs: sorted[n - 1] };
  }
}

/** A FileJournalStore whose commits are timed; everything else is passed through. */
export class MeasuredJournalStore implements JournalStore {
  readonly commitLatency = new LatencyRing();

  constructor(readonly inner: FileJournalStore) {}

  commit(entries: readonly CommitEntry[]): CommitRejection[] {
    const t0 = performance.now();
    try {
      return this.inner.commit(entries);
    } finally {
      this.commitLatency.add(performance.now() - t0);
    }
  }

  load(runId: string): RunTail | undefined {
    return this.inner.load(runId);
  }

  readEvents(runId: string, afterSeq: number, limit: number): EventPage {
    return this.inner.readEvents(runId, afterSeq, limit);
  }

  getRun(runId: string): RunRecord | undefined {
    return this.inner.getRun(runId);
  }

  listRuns(filter?: { statuses?: readonly string[]; limit?: number }): RunRecord[] {
    return this.inner.listRuns(filter);
  }

  runsWithoutProjection(): RunRecord[] {
    return this.inner.runsWithoutProjection();
  }

  keepProjection(runId: string, lastSeq: number, projection: RunProjection): void {
    this.inner.keepProjection(runId, lastSeq, projection);
  }

  get formatVersion(): number {
    return this.inner.formatVersion;
  }

  compactionDue(): boolean {
    return this.inner.compactionDue();
  }

  compact(): CompactionReport {
    return this.inner.compact();
  }

  close(): void {
    this.inner.close();
  }
}

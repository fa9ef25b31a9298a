// The router host's journal store: the checksummed append-only file journal (file-journal.ts),
// whose group commits are timed (`FileJournalOptions.observeCommit`) into a bounded ring. The
// store itself is what the kernel gets, so its artifacts and the capture policy are reachable.
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

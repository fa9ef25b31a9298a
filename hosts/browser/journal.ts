// The browser host's storage: one imported run export, held in memory, read-only. It answers the
// same `JournalStore` contract as the other hosts so the same code can read it; commits are
// refused because a replay page never appends to a run.
import { StoreError, type CommitEntry, type CommitRejection, type EventPage, type JournalStore, type RunRecord, type RunTail } from '../core/store.js';
import type { RunExport } from '../core/export-format.js';

export { exportFormat, ExportError, parseExport, parseExportText, type RunExport } from '../core/export-format.js';

const encoder = new TextEncoder();

export class ImportedJournal implements JournalStore {
  readonly runId: string;

  constructor(readonly exported: RunExport) {
    this.runId = exported.run.runId;
  }

  get lastSeq(): number {
    return this.exported.events.length;
  }

  commit(entries: readonly CommitEntry[]): CommitRejection[] {
    if (entries.length === 0) return [];
    throw new StoreError('store.io', 'an imported journal is read-only');
  }

  /** The whole run as a cold tail: the plan and every event (an export carries no checkpoint). */
  load(runId: string): RunTail | undefined {
    if (runId !== this.runId) return undefined;
    const lines = this.exported.events.map((e) => JSON.stringify(e)).join('\n');
    return { plan: encoder.encode(JSON.stringify(this.exported.plan)), events: encoder.encode(lines), lastSeq: this.lastSeq };
  }

  readEvents(runId: string, afterSeq: number, limit: number): EventPage {
    if (runId !== this.runId) throw new StoreError('store.not-found', `run ${runId} is not in this export`);
    const from = Math.max(0, Math.min(afterSeq, this.lastSeq));
    const slice = this.exported.events.slice(from, from + Math.max(0, limit));
    const lastSeq = slice.length > 0 ? slice[slice.length - 1].seq : afterSeq;
    return { events: slice.map((e) => JSON.stringify(e)), lastSeq, more: from + slice.length < this.lastSeq };
  }

  getRun(runId: string): RunRecord | undefined {
    if (runId !== this.runId) return undefined;
    const first = Date.parse(this.exported.events[0].occurredAt);
    const last = Date.parse(this.exported.events[this.lastSeq - 1].occurredAt);
    return { runId, status: this.exported.run.status, lastSeq: this.lastSeq, createdAt: first, updatedAt: last };
  }

  listRuns(filter?: { statuses?: readonly string[]; limit?: number }): RunRecord[] {
    const run = this.getRun(this.runId)!;
    if (filter?.statuses && !filter.statuses.includes(run.status)) return [];
    return filter?.limit === 0 ? [] : [run];
  }

  close(): void {}
}

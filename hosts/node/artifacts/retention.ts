// Artifact retention: the captured payloads a deployment keeps for `retentionDays`, then deletes
// (`runtime.artifacts.collect`, `agent-workflow gc`, and `serve` every hour). Run journals are
// kept: they are the authoritative record; what goes is the bytes of large payloads, so a run
// older than the TTL still inspects, and its recorded replay names the artifacts it lacks.
//
// Safe against runs that need an artifact:
// - an artifact any unfinished run names (in its events or its checkpoint) is kept, whatever its age;
// - an artifact is content-addressed and shared: a run that captures the same bytes again stores
//   them again, which refreshes when it was last stored, and the delete checks that age again in
//   the same statement, so an artifact a run has just asked for is never taken.
import { isTerminalStatus } from '../../core/types.js';
import { readAllEventTextsAsync } from '../../core/host-runtime.js';
import type { NodeJournalStore } from '../stores/bundle.js';
import { artifactLimits } from '../limits.js';

const dayMs = 86_400_000;
const { retentionPageArtifacts, retentionPageRuns } = artifactLimits;
const digestPattern = /sha256:[0-9a-f]{64}/g;

export interface CollectOptions {
  /** Artifacts last stored longer ago than this are collected. */
  retentionDays: number;
  /** Report what would be deleted; delete nothing. */
  dryRun?: boolean;
  /** The store's clock (ms since the epoch). */
  now: number;
}

export interface CollectReport {
  dryRun: boolean;
  retentionDays: number;
  /** Artifacts last stored before this time were examined (ISO 8601). */
  cutoff: string;
  /** Artifacts older than the cutoff. */
  expired: number;
  /** Of those, kept because an unfinished run names them. */
  keptForUnfinishedRuns: number;
  /** Deleted (or, on a dry run, that would be). */
  deleted: number;
  deletedBytes: number;
  /** Unfinished runs whose journals were read for the artifacts they name. */
  unfinishedRuns: number;
}

/** Every artifact digest an unfinished run names, in its events or its checkpoint. */
async function namedByUnfinishedRuns(store: NodeJournalStore): Promise<{ digests: Set<string>; runs: number }> {
  const statuses = Object.keys(await store.countRuns()).filter((s) => !isTerminalStatus(s));
  const digests = new Set<string>();
  let runs = 0;
  if (statuses.length === 0) return { digests, runs };
  let before: { createdAt: number; runId: string } | undefined;
  for (;;) {
    const page = await store.listRuns({ statuses, limit: retentionPageRuns, ...(before ? { before } : {}) });
    for (const run of page) {
      runs++;
      for (const text of await readAllEventTextsAsync(store, run.runId)) for (const d of text.match(digestPattern) ?? []) digests.add(d);
      const tail = await store.load(run.runId);
      if (tail?.checkpoint) for (const d of new TextDecoder().decode(tail.checkpoint).match(digestPattern) ?? []) digests.add(d);
    }
    if (page.length < retentionPageRuns) break;
    const last = page[page.length - 1]!;
    before = { createdAt: last.createdAt, runId: last.runId };
  }
  return { digests, runs };
}

/** Collects the artifacts past the retention time that no unfinished run names. */
export async function collectArtifacts(store: NodeJournalStore, options: CollectOptions): Promise<CollectReport> {
  const cutoff = options.now - options.retentionDays * dayMs;
  const report: CollectReport = { dryRun: options.dryRun === true, retentionDays: options.retentionDays, cutoff: new Date(cutoff).toISOString(), expired: 0, keptForUnfinishedRuns: 0, deleted: 0, deletedBytes: 0, unfinishedRuns: 0 };
  // Read before listing: a run that starts after this captures its artifacts anew (refreshing them).
  const named = await namedByUnfinishedRuns(store);
  report.unfinishedRuns = named.runs;
  let afterDigest: string | undefined;
  for (;;) {
    const page = await store.artifactsStoredBefore(cutoff, { limit: retentionPageArtifacts, ...(afterDigest ? { afterDigest } : {}) });
    if (page.length === 0) break;
    afterDigest = page[page.length - 1]!.digest;
    report.expired += page.length;
    const collectable = page.filter((a) => !named.digests.has(a.digest));
    report.keptForUnfinishedRuns += page.length - collectable.length;
    if (options.dryRun) {
      report.deleted += collectable.length;
      report.deletedBytes += collectable.reduce((n, a) => n + a.size, 0);
    } else {
      const deleted = await store.deleteArtifacts(collectable.map((a) => a.digest), cutoff);
      report.deleted += deleted.length;
      report.deletedBytes += deleted.reduce((n, a) => n + a.size, 0);
    }
  }
  return report;
}

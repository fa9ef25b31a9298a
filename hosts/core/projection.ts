// Run projections as hosts keep and read them. The engine computes a run's projection with every
// activation (the summary carries it) and the kernel stores it with the commit; a run recorded
// before stores kept whole projections gets one derived once from its journal by the engine's
// `inspect` fold, never by reading events here.
import type { EngineInstance } from './engine-instance.js';
import type { JournalStore, RunRecord } from './store.js';
import type { NeedsAttention } from '../../engine/protocol/projection.js';
import type { ActivationSummary, ExecutionPlan, RunProjection } from './types.js';

/** How a run ended, or where it rests, as callers of the host API see it. */
export interface RunOutcome {
  runId: string;
  status: string;
  pausedReason?: string;
  /** What waits for an operator's resolution (paused `needs_attention`), each unknown with its `seq`. */
  attention?: NeedsAttention[];
  output?: unknown;
  error?: { code: string; message: string; detail?: unknown };
  seq: number;
}

/** Events read per page while a projection is derived. */
const derivePageEvents = 1_000;

/** The projection a commit carries: the summary without its bookkeeping, and no payload of a `metadata` run. */
export function storedProjection(summary: ActivationSummary): RunProjection {
  const { runId: _runId, seq: _seq, activation: _activation, events: _events, payloadsKept, result, pausedReason, ...rest } = summary;
  return {
    ...rest,
    ...(pausedReason !== undefined && summary.status === 'paused' ? { pausedReason } : {}),
    ...(result !== undefined && payloadsKept !== false ? { result } : {}),
  };
}

/**
 * The projection of a stored run: the one its last commit carried, or, for a run recorded
 * without one, the engine's fold of its journal (kept by the store when it can, so this happens
 * once per run).
 */
export async function projectionOfRecord(store: JournalStore, engine: EngineInstance, record: RunRecord): Promise<RunProjection> {
  if (record.outcome !== undefined || record.lastSeq === 0) return record.outcome ?? {};
  const tail = await store.load(record.runId);
  if (!tail) return {};
  const plan = JSON.parse(new TextDecoder().decode(tail.plan)) as ExecutionPlan;
  const events: unknown[] = [];
  let lastSeq = 0;
  for (let more = true; more; ) {
    const page = await store.readEvents(record.runId, lastSeq, derivePageEvents);
    for (const line of page.events) events.push(JSON.parse(line));
    more = page.more && page.lastSeq > lastSeq;
    lastSeq = page.lastSeq;
  }
  const report = engine.replay({ mode: 'inspect', plan, events }) as { projection?: RunProjection };
  const projection = report.projection ?? {};
  await store.keepProjection?.(record.runId, lastSeq, projection);
  return projection;
}

/** A run's outcome from its record and projection. */
export function outcomeOfRecord(record: RunRecord, projection: RunProjection): RunOutcome {
  return {
    runId: record.runId,
    status: record.status,
    seq: record.lastSeq,
    ...(projection.pausedReason !== undefined && record.status === 'paused' ? { pausedReason: projection.pausedReason } : {}),
    ...(projection.attention !== undefined && record.status === 'paused' ? { attention: projection.attention } : {}),
    ...(projection.result !== undefined ? { output: projection.result } : {}),
    ...(projection.error !== undefined ? { error: projection.error } : {}),
  };
}

/**
 * The outcome of a run whose terminal commit this process just made, from that commit's summary:
 * what `outcomeOfRecord` answers once the commit is read back (a terminal run never changes).
 */
export function outcomeOfCommitted(summary: ActivationSummary): RunOutcome {
  return outcomeOfRecord({ runId: summary.runId, status: summary.status, lastSeq: summary.seq } as RunRecord, storedProjection(summary));
}

// The operator verbs, one interface that every host implements with these signatures: the Node
// SDK (`WorkflowRuntime`) and the router (`RouterOperator` over a `RouterHost`). Tools built on
// it (the CLIs, the HTTP API, MCP, a DingTalk robot) work against either host unchanged.
//
// Every verb that changes a run answers the run's outcome once the change is applied; reads
// answer what the store holds. A run that does not exist is `run.not-found`.
import type { RunExport } from './export-format.js';
import type { RunView } from './host-runtime.js';
import type { RunOutcome } from './kernel.js';
import type { JournalStore, RunRecord } from './store.js';
import type { Resolution } from './operator.js';

export interface OperatorDecision {
  by: string;
  comment?: string;
}

/** What an operator says of a node whose outcome is unknown (the fields are documented on `Resolution`). */
export type OperatorResolution = Resolution;

/** A page of a run's journal, ascending by seq. */
export interface TracePage {
  events: any[];
  lastSeq: number;
  more: boolean;
}

export interface Operator {
  getRun(runId: string): Promise<RunView>;
  listRuns(filter?: { statuses?: string[]; limit?: number }): Promise<RunRecord[]>;
  /** The run's journal (its trace) after `afterSeq` (default 0), at most `limit` events. */
  readEvents(runId: string, options?: { afterSeq?: number; limit?: number }): Promise<TracePage>;
  exportRun(runId: string): Promise<RunExport>;
  approve(runId: string, nodeId: string, decision: OperatorDecision & { approved?: boolean }): Promise<RunOutcome>;
  reject(runId: string, nodeId: string, decision: OperatorDecision): Promise<RunOutcome>;
  resolve(runId: string, nodeId: string, resolution: OperatorResolution): Promise<RunOutcome>;
  cancel(runId: string, options?: { reason?: string; by?: string }): Promise<RunOutcome>;
  /** Carries on a run this host holds; answers with a handle whose `settled()` is its next stop. */
  resume(runId: string, options?: { by?: string }): Promise<{ runId: string; settled(): Promise<RunOutcome> }>;
}

/** Events per trace page when the caller names no limit, and at most. */
export const tracePageLimits = { eventsDefault: 500, eventsMax: 10_000 } as const;

/** A page of a run's journal from any store (`readEvents` of every host). */
export async function tracePage(store: Pick<JournalStore, 'readEvents'>, runId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<TracePage> {
  const page = await store.readEvents(runId, options.afterSeq ?? 0, Math.min(options.limit ?? tracePageLimits.eventsDefault, tracePageLimits.eventsMax));
  return { events: page.events.map((e) => JSON.parse(e)), lastSeq: page.lastSeq, more: page.more };
}

// Hands each tool and agent call its W3C trace context (`context.traceparent`): the run's trace id
// (from the launch's traceparent kept in the run's correlation, or derived from the run id) and
// the call's span id, derived from the run id and invocation id (hosts/core/trace-context.ts).
import type { Gateway } from '../../core/gateway.js';
import type { JournalStore } from '../../core/store.js';
import { RunTraceIds, traceparentOfCorrelation } from '../../core/trace-context.js';
import { sha256Digest } from '../../shared/digest.js';

/** Runs whose trace ids a runtime keeps; the least recently used is read again from the journal. */
const runsKeptMax = 4096;

export class RunTraces {
  private readonly runs = new Map<string, RunTraceIds>();

  constructor(private readonly store: JournalStore) {}

  /** Known at launch: no journal read for the run's calls. */
  remember(runId: string, correlation: unknown): RunTraceIds {
    const ids = new RunTraceIds(runId, traceparentOfCorrelation(correlation), sha256Digest);
    this.keep(runId, ids);
    return ids;
  }

  private keep(runId: string, ids: RunTraceIds): void {
    this.runs.delete(runId);
    this.runs.set(runId, ids);
    if (this.runs.size > runsKeptMax) {
      const [oldest] = this.runs.keys();
      this.runs.delete(oldest);
    }
  }

  /** The run's trace ids: kept, or from its first event's correlation. */
  async of(runId: string): Promise<RunTraceIds> {
    const kept = this.runs.get(runId);
    if (kept) return kept;
    const page = await this.store.readEvents(runId, 0, 1);
    const first = page.events[0] ? (JSON.parse(page.events[0]) as { correlation?: unknown }) : undefined;
    return this.remember(runId, first?.correlation);
  }
}

/** A gateway whose calls get `context.traceparent`. */
export function withTraceContext(gateway: Gateway, traces: RunTraces): Gateway {
  return {
    effects: () => gateway.effects(),
    execute: async (request, context) => {
      let traceparent: string | undefined;
      try {
        traceparent = (await traces.of(request.runId)).callTraceparent(request.invocationId);
      } catch {
        // A journal that cannot be read now: the call goes on without a trace context.
      }
      return gateway.execute(request, { ...context, ...(traceparent ? { traceparent } : {}) });
    },
  };
}

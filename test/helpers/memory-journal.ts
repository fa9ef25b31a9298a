// A journal in memory for tests that drive an `EngineInstance` without a store: what a cold
// activation loads is what the applied commits wrote (a checkpoint drops the events before it).
const decoder = new TextDecoder();

export interface MemoryTail {
  plan: Uint8Array;
  checkpoint?: Uint8Array;
  events: Uint8Array;
  lastSeq: number;
}

export function memoryJournal() {
  const runs = new Map<string, { plan: Uint8Array; checkpoint?: Uint8Array; events: Uint8Array[]; lastSeq: number }>();
  return {
    /** While set, `load` fails as a store whose disk failed would. */
    failing: false,
    load(runId: string): MemoryTail | undefined {
      if (this.failing) throw Object.assign(new Error('disk on fire'), { code: 'store.io' });
      const r = runs.get(runId);
      if (!r) return undefined;
      const events = new TextEncoder().encode(r.events.map((e) => decoder.decode(e)).join('\n'));
      return { plan: r.plan, ...(r.checkpoint ? { checkpoint: r.checkpoint } : {}), events, lastSeq: r.lastSeq };
    },
    apply(commits: { runId: string; events: Uint8Array; checkpoint?: Uint8Array; plan?: Uint8Array; lastSeq: number }[]) {
      for (const c of commits) {
        const r = runs.get(c.runId) ?? { plan: c.plan!, events: [], lastSeq: 0 };
        runs.set(c.runId, r);
        r.events.push(c.events);
        r.lastSeq = c.lastSeq;
        if (c.checkpoint) {
          r.checkpoint = c.checkpoint;
          r.events = [];
        }
      }
    },
  };
}

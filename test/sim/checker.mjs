// The simulation's checker. It knows nothing of what the simulator did: it reopens the journal
// the world left on disk, reads the tools' side-effect log, and verifies the invariants.
import { readFileSync } from 'node:fs';
import { allEvents, buildHost, SqliteJournalStore } from '../durability/host.mjs';

const terminal = new Set(['completed', 'failed', 'cancelled']);
const decoder = new TextDecoder();

/** The per-node part of a run state that `inspect` replay reports (status, attempt, output, error). */
function nodesView(state) {
  const out = {};
  for (const [id, n] of Object.entries(state.nodes)) {
    const v = { status: n.status, attempt: n.attempt };
    if (n.output !== undefined) v.output = n.output;
    if (n.error !== undefined) v.error = n.error;
    out[id] = v;
  }
  return out;
}

/** An engine with no gateway at all: recorded replay must not need one. */
let checkerHost;
async function replayHost() {
  checkerHost ??= await buildHost({
    store: SqliteJournalStore.open(':memory:'),
    gateway: {
      effects: () => ({}),
      execute: () => {
        throw new Error('the checker has no gateway');
      },
    },
  });
  return checkerHost;
}

/** Returns the violated invariants of one world (empty when all hold). */
export async function checkWorld({ dbFile, effectsFile, runIds }) {
  const violations = [];
  const bad = (runId, m) => violations.push(`${runId}: ${m}`);
  const store = SqliteJournalStore.open(dbFile);
  const host = await replayHost();
  const stats = { runs: 0, completed: 0, failed: 0, paused: 0, events: 0, replayed: 0 };
  try {
    const effects = readFileSync(effectsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    // No execution of work with an unknown effect happens twice.
    const unsafeRuns = new Map();
    for (const x of effects) if (x.effect === 'unknown') unsafeRuns.set(x.invocationId, (unsafeRuns.get(x.invocationId) ?? 0) + 1);
    for (const [id, n] of unsafeRuns) if (n > 1) violations.push(`${id}: a call with an unknown effect ran ${n} times`);
    for (const x of effects) if (x.effect === 'unknown' && x.reissued) violations.push(`${x.invocationId}: a call with an unknown effect was reissued`);

    for (const runId of runIds) {
      const record = store.getRun(runId);
      if (!record) {
        bad(runId, 'was launched but is not in the store');
        continue;
      }
      stats.runs += 1;
      const events = allEvents(store, runId);
      stats.events += events.length;
      // Gap-free sequence.
      events.forEach((e, i) => {
        if (e.seq !== i + 1) bad(runId, `event ${i} has seq ${e.seq}`);
        if (e.runId !== runId) bad(runId, `event ${e.seq} names run ${e.runId}`);
      });
      if (record.lastSeq !== events.length) bad(runId, `last seq ${record.lastSeq} but ${events.length} events`);

      // Terminal, or paused with a reason.
      const status = record.status;
      let pausedReason;
      for (const e of events) {
        if (e.type === 'run.paused') pausedReason = e.payload.reason;
        if (e.type === 'run.resumed') pausedReason = undefined;
      }
      if (status === 'completed') stats.completed += 1;
      else if (terminal.has(status)) stats.failed += 1;
      else if (status === 'paused' && pausedReason) stats.paused += 1;
      else bad(runId, `ended the simulation ${status}${pausedReason ? `(${pausedReason})` : ''}, neither terminal nor paused with a reason`);

      // Each capability.completed answers exactly one open capability.requested.
      const open = new Set();
      const completedOnce = new Set();
      for (const e of events) {
        const id = e.payload.invocationId;
        if (e.type === 'capability.requested') open.add(id);
        if (e.type === 'capability.completed') {
          if (!open.has(id)) bad(runId, `capability.completed ${id} (seq ${e.seq}) answers no open request`);
          if (completedOnce.has(id)) bad(runId, `capability.completed ${id} twice`);
          completedOnce.add(id);
          open.delete(id);
        }
        if (e.type === 'capability.cancelled' || e.type === 'capability.abandoned') open.delete(id);
      }

      // The latest checkpoint equals the fold of the events up to it.
      const tail = store.load(runId);
      if (tail.checkpoint) {
        const cp = JSON.parse(decoder.decode(tail.checkpoint));
        const upTo = events.filter((e) => e.seq <= cp.seq);
        const folded = host.engine.replay({ mode: 'inspect', plan: JSON.parse(decoder.decode(tail.plan)), events: upTo, includeState: true });
        // The whole checkpoint is the fold of the events up to it: nothing changes state outside `reduce`.
        const whole = stateDifference(cp, folded.state);
        if (whole) bad(runId, `checkpoint at seq ${cp.seq} differs from the fold of events 1..${cp.seq} at ${whole}`);
        const cpOutcome = { status: cp.status, ...(cp.pausedReason ? { pausedReason: cp.pausedReason } : {}), ...(cp.result !== undefined ? { output: cp.result } : {}), ...(cp.error !== undefined ? { error: cp.error } : {}) };
        if (JSON.stringify(folded.nodes) !== JSON.stringify(nodesView(cp))) bad(runId, `checkpoint at seq ${cp.seq}: nodes differ from the fold of events 1..${cp.seq}`);
        if (JSON.stringify(folded.outcome) !== JSON.stringify(cpOutcome)) bad(runId, `checkpoint at seq ${cp.seq}: outcome ${JSON.stringify(cpOutcome)} differs from the fold ${JSON.stringify(folded.outcome)}`);
        // In flight and edges, folded independently of the engine.
        const inflight = new Set();
        const edges = {};
        for (const e of upTo) {
          if (e.type === 'capability.requested') inflight.add(e.payload.invocationId);
          if (e.type === 'capability.completed' || e.type === 'capability.cancelled' || e.type === 'capability.abandoned') inflight.delete(e.payload.invocationId);
          if (e.type === 'edge.taken' || e.type === 'edge.skipped') edges[e.payload.edge] = e.type === 'edge.taken' ? 'taken' : 'skipped';
        }
        if (JSON.stringify([...inflight].sort()) !== JSON.stringify(Object.keys(cp.inflight).sort())) bad(runId, `checkpoint at seq ${cp.seq}: in-flight invocations differ from the fold`);
        if (JSON.stringify(edges) !== JSON.stringify(Object.fromEntries(Object.entries(cp.edges).sort(([a], [b]) => Number(a) - Number(b))))) bad(runId, `checkpoint at seq ${cp.seq}: edges differ from the fold`);
        const tailSeqs = decoder.decode(tail.events).split('\n').filter(Boolean).map((l) => JSON.parse(l).seq);
        if (tailSeqs.length !== record.lastSeq - cp.seq || (tailSeqs.length > 0 && tailSeqs[0] !== cp.seq + 1)) bad(runId, `load() returned events ${tailSeqs[0]}.. after a checkpoint at ${cp.seq}`);
      } else if (status === 'paused' || (terminal.has(status) && !JSON.parse(decoder.decode(tail.plan)).flags.includes('checkpoint-v3'))) {
        bad(runId, `is ${status} but has no checkpoint`);
      } else {
        // No checkpoint (an ended run of a `checkpoint-v3` plan): load() hands back every event.
        const tailSeqs = decoder.decode(tail.events).split('\n').filter(Boolean).map((l) => JSON.parse(l).seq);
        if (tailSeqs.length !== record.lastSeq || (tailSeqs.length > 0 && tailSeqs[0] !== 1)) bad(runId, `load() returned events ${tailSeqs[0]}.. of ${record.lastSeq} without a checkpoint`);
      }

      // Recorded replay of every completed run is identical.
      if (status === 'completed') {
        stats.replayed += 1;
        const replay = host.engine.replay({ mode: 'recorded', plan: JSON.parse(decoder.decode(tail.plan)), events });
        if (replay.identical !== true) bad(runId, `recorded replay diverged: ${JSON.stringify(replay.firstDivergence)}`);
      }
    }
  } finally {
    store.close();
  }
  return { violations, stats };
}

/** The first JSON pointer where two states differ, or undefined (key order ignored). */
function stateDifference(a, b, path = '') {
  if (a === b) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return `${path || '/'}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    if (a[k] === undefined && b[k] === undefined) continue;
    const d = stateDifference(a[k], b[k], `${path}/${k}`);
    if (d) return d;
  }
  return undefined;
}

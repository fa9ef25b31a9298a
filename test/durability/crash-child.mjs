// The process the crash matrix kills. It builds a Node host from the built pieces, wraps the
// journal store and the gateway so that it can SIGKILL itself at one chosen point, launches the
// runs of one scenario and waits for them to settle.
//
//   node crash-child.mjs '<json: {dir, scenario, plans, kill?}>'
//
// plans: a JSON file of pinned plans by run id, compiled once by the parent (compiling is the
// slow part of a cold engine, and a plan is an input of a run anyway).
//
// kill (at most one point; the process kills itself the first time it is reached):
//   {kind: 'commit',  phase: 'before'|'after', nth, match?}  around the nth store.commit call
//   {kind: 'mid-commit', nth, row, match?}                    inside the transaction, after the
//                                                             row-th event row of that commit
//   {kind: 'gateway', phase: 'before'|'after', nth}           around the nth tool execution
// match: 'any' (default) or 'checkpoint-running' (a commit carrying a checkpoint of a run that
// is still running: the interval checkpoint, not the one taken at pause or end).
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildHost, SqliteJournalStore, registryGateway } from './host.mjs';
import { makeTools, scenarios } from './scenarios.mjs';

const config = JSON.parse(process.argv[2]);
const { dir, scenario, kill } = config;
const plans = JSON.parse(readFileSync(config.plans, 'utf8'));
const tracePath = join(dir, 'trace.jsonl');
const decoder = new TextDecoder();

function describeCommit(entries) {
  return entries.map((e) => ({
    runId: e.runId,
    seq: [e.expectedSeq + 1, e.lastSeq],
    status: e.status,
    checkpoint: e.checkpoint !== undefined,
    checkpointBytes: e.checkpoint?.byteLength ?? 0,
    types: decoder
      .decode(e.events)
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l).type),
  }));
}

function die(point) {
  writeFileSync(join(dir, 'kill.json'), JSON.stringify(point));
  process.kill(process.pid, 'SIGKILL');
}

const inner = SqliteJournalStore.open(join(dir, 'workflow.db'));

// Mid-transaction kills: TEMP triggers (this connection only; the stored schema is untouched)
// call back into this process after each row the commit writes to `runs`, `checkpoints` and
// `events` (a run's row, its checkpoint when it takes a large one, then its events, a row of up to 64);
// armed only during the chosen commit.
let armed;
let rowsInArmed = 0;
if (kill?.kind === 'mid-commit') {
  inner.db.function('fault_point', () => {
    if (armed && ++rowsInArmed === kill.row) die(armed);
    return 0;
  });
  inner.db.exec(`
    CREATE TEMP TRIGGER fault_after_event AFTER INSERT ON main.events BEGIN SELECT fault_point(); END;
    CREATE TEMP TRIGGER fault_after_run_insert AFTER INSERT ON main.runs BEGIN SELECT fault_point(); END;
    CREATE TEMP TRIGGER fault_after_run_update AFTER UPDATE ON main.runs BEGIN SELECT fault_point(); END;
    CREATE TEMP TRIGGER fault_after_checkpoint_insert AFTER INSERT ON main.checkpoints BEGIN SELECT fault_point(); END;
    CREATE TEMP TRIGGER fault_after_checkpoint_update AFTER UPDATE ON main.checkpoints BEGIN SELECT fault_point(); END;
  `);
}

function matches(entries) {
  if (!kill?.match || kill.match === 'any') return true;
  if (kill.match === 'checkpoint-running') return entries.some((e) => e.checkpoint !== undefined && e.status === 'running');
  throw new Error(`unknown match ${kill.match}`);
}

let commits = 0;
let matchingCommits = 0;
const store = {
  commit(entries) {
    if (entries.length === 0) return inner.commit(entries);
    commits += 1;
    const counted = matches(entries) ? ++matchingCommits : 0;
    const described = { commit: commits, entries: describeCommit(entries) };
    appendFileSync(tracePath, `${JSON.stringify({ at: 'commit', ...described })}\n`);
    const hit = counted !== 0 && counted === kill?.nth;
    if (hit && kill.kind === 'commit' && kill.phase === 'before') die({ ...kill, ...described });
    if (hit && kill.kind === 'mid-commit') armed = { ...kill, ...described };
    const rejected = inner.commit(entries);
    armed = undefined;
    if (hit && kill.kind === 'commit' && kill.phase === 'after') die({ ...kill, ...described });
    return rejected;
  },
  load: (runId) => inner.load(runId),
  readEvents: (runId, afterSeq, limit) => inner.readEvents(runId, afterSeq, limit),
  getRun: (runId) => inner.getRun(runId),
  listRuns: (filter) => inner.listRuns(filter),
  close: () => inner.close(),
};

const runs = scenarios[scenario];
const registry = registryGateway({ tools: makeTools(join(dir, 'effects.log'), { chargeIdempotent: runs.some((r) => r.chargeIdempotent) }) });
let calls = 0;
const gateway = {
  effects: () => registry.effects(),
  async execute(request, context) {
    calls += 1;
    const described = { call: calls, invocationId: request.invocationId, runId: request.runId, nodeId: request.nodeId, tool: request.name, effect: request.effect, reissued: context.reissued };
    appendFileSync(tracePath, `${JSON.stringify({ at: 'gateway', ...described })}\n`);
    const hit = kill?.kind === 'gateway' && kill.nth === calls;
    if (hit && kill.phase === 'before') die({ ...kill, ...described });
    const outcome = await registry.execute(request, context);
    // The tool has run (its effect is in the log); its outcome is not journaled yet.
    if (hit && kill.phase === 'after') die({ ...kill, ...described });
    return outcome;
  },
};

const host = await buildHost({ store, gateway });
await Promise.all(
  runs.map(async (r) => {
    const plan = plans[r.runId];
    await host.kernel.launch({ runId: r.runId, plan, templateKey: plan.root, input: r.input, authority: { id: 'local', scopes: ['*'] } });
    appendFileSync(join(dir, 'acks.log'), `${r.runId}\n`);
  }),
);
const outcomes = await Promise.all(runs.map((r) => host.kernel.waitFor(r.runId, true)));
writeFileSync(join(dir, 'outcomes.json'), JSON.stringify(outcomes));
await host.kernel.close();
inner.close();
process.exit(0);

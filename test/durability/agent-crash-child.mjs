// The process the agent crash test kills: a Node host from the built pieces running the 5-turn
// agent loop of agent-fixture.mjs, which SIGKILLs itself at one chosen point.
//
//   node agent-crash-child.mjs '<json: {dir, plan, kill?}>'
//
// kill: {kind: 'commit', phase: 'before'|'after', nth} around the nth store commit, or
//       {kind: 'gateway', phase: 'before'|'after', nth} around the nth gateway call (model
//       turns and tool calls alike; 'after': the call returned, its outcome is not journaled).
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildHost, everything, registryGateway, SqliteJournalStore } from './host.mjs';
import { agentRegistry, input, runId } from './agent-fixture.mjs';

const { dir, plan: planFile, kill } = JSON.parse(process.argv[2]);
const plan = JSON.parse(readFileSync(planFile, 'utf8'));
const trace = (entry) => appendFileSync(join(dir, 'trace.jsonl'), `${JSON.stringify(entry)}\n`);

function die(point) {
  writeFileSync(join(dir, 'kill.json'), JSON.stringify(point));
  process.kill(process.pid, 'SIGKILL');
}

const inner = SqliteJournalStore.open(join(dir, 'workflow.db'));
let commits = 0;
const store = {
  commit(entries) {
    if (entries.length === 0) return inner.commit(entries);
    commits += 1;
    const point = { at: 'commit', nth: commits };
    trace(point);
    if (kill?.kind === 'commit' && kill.nth === commits && kill.phase === 'before') die({ ...kill, ...point });
    const rejected = inner.commit(entries);
    if (kill?.kind === 'commit' && kill.nth === commits && kill.phase === 'after') die({ ...kill, ...point });
    return rejected;
  },
  load: (id) => inner.load(id),
  readEvents: (id, afterSeq, limit) => inner.readEvents(id, afterSeq, limit),
  getRun: (id) => inner.getRun(id),
  listRuns: (filter) => inner.listRuns(filter),
  close: () => inner.close(),
};

const registry = registryGateway(agentRegistry(dir));
let calls = 0;
const gateway = {
  effects: () => registry.effects(),
  async execute(request, context) {
    calls += 1;
    const point = { at: 'gateway', nth: calls, kind: request.kind, invocationId: request.invocationId };
    trace(point);
    if (kill?.kind === 'gateway' && kill.nth === calls && kill.phase === 'before') die({ ...kill, ...point });
    const outcome = await registry.execute(request, context);
    if (kill?.kind === 'gateway' && kill.nth === calls && kill.phase === 'after') die({ ...kill, ...point });
    return outcome;
  },
};

const host = await buildHost({ store, gateway });
await host.kernel.launch({ runId, plan, templateKey: plan.root, input, authority: everything });
const outcome = await host.kernel.waitFor(runId, true);
writeFileSync(join(dir, 'outcome.json'), JSON.stringify(outcome));
await host.kernel.close();
inner.close();
process.exit(0);

// DBOS Transact on the local PostgreSQL (system database only; every step is checkpointed in
// Postgres before the workflow continues, which is DBOS's only mode).
import { importPeer, peerVersion, pool } from '../lib/util.mjs';

const PG_BASE = process.env.BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432';
// The runner process and its child processes use different system databases, so a child's
// queue is never polled (nor its workflows recovered) by the runner's DBOS instance.
const dbName = () => (process.env.BENCH_CHILD ? 'bench_dbos_child' : 'bench_dbos');

let DBOS, fns, pgFacts = '?', launched = false;

async function init() {
  ({ DBOS } = await importPeer('@dbos-inc/dbos-sdk'));
  const noop = async () => 0;
  DBOS.setConfig({
    name: 'agent-dag-bench',
    systemDatabaseUrl: `${PG_BASE}/${dbName()}`,
    logLevel: process.env.BENCH_DBOS_LOG ?? 'error',
    runAdminServer: false,
  });
  const chain = DBOS.registerWorkflow(async (steps) => {
    for (let i = 0; i < steps; i++) await DBOS.runStep(noop, { name: `s${i}` });
    return steps;
  }, { name: 'chain' });
  const twoStep = DBOS.registerWorkflow(async () => {
    await DBOS.runStep(noop, { name: 'a' });
    await DBOS.runStep(noop, { name: 'b' });
  }, { name: 'twoStep' });
  // Fan-out inside one workflow: batches of `concurrency` steps run with Promise.all, so the
  // order in which step IDs are assigned stays deterministic for recovery.
  const fan = DBOS.registerWorkflow(async (items, concurrency) => {
    let done = 0;
    for (let b = 0; b < items; b += concurrency) {
      const batch = [];
      for (let i = b; i < Math.min(items, b + concurrency); i++) batch.push(DBOS.runStep(async () => i, { name: 'item' }));
      done += (await Promise.all(batch)).length;
    }
    return done;
  }, { name: 'fan' });
  fns = { chain, twoStep, fan };
  await DBOS.launch();
  launched = true;
  try {
    const pg = (await importPeer('pg')).default;
    const c = new pg.Client({ connectionString: `${PG_BASE}/${dbName()}` });
    await c.connect();
    const r = await c.query("select current_setting('fsync') f, current_setting('synchronous_commit') s, current_setting('server_version') v");
    pgFacts = `PostgreSQL ${r.rows[0].v}, fsync=${r.rows[0].f}, synchronous_commit=${r.rows[0].s}`;
    await c.end();
  } catch (e) { pgFacts = `PostgreSQL (settings unreadable: ${e.message})`; }
}

async function fanOut({ items, concurrency }) {
  const done = await fns.fan.call(undefined, items, concurrency);
  if (done !== items) throw new Error(`fan-out finished ${done}/${items}`);
}

const recorded = new Map();
let replayQueue;

export default {
  name: 'dbos',
  kind: 'peer',
  get version() {
    try { return `@dbos-inc/dbos-sdk ${peerVersion('@dbos-inc/dbos-sdk')}, pg ${peerVersion('pg')}`; } catch { return 'not installed'; }
  },
  get durability() {
    return `every step checkpointed in Postgres before continuing (only mode); ${pgFacts}`;
  },
  notes: {
    fanOut1000: 'one workflow, 1,000 steps in batches of 10 run with Promise.all (a queue of child workflows with the default 1 s polling dequeues 10 per poll: about 100 s for 1,000 items)',
    foreach10k: 'one workflow, 10,000 steps in batches of 10 run with Promise.all',
    replay10k: 'recorded workflow of N steps, DBOS.forkWorkflow from its last step onto a queue: the function re-runs and every earlier step returns its recorded output; timed from dequeue to completion (DBOS status timestamps)',
    coldStart: 'fresh process: import DBOS, launch against an existing system database, first 2-step run',
  },
  na: {},
  async setup() {
    await init();
  },
  async teardown() {
    if (launched) await DBOS.shutdown();
    launched = false;
  },
  workloads: {
    async twoStep() { await fns.twoStep.call(undefined); },
    async hundredStep({ steps }) { await fns.chain.call(undefined, steps); },
    fanOut1000: fanOut,
    foreach10k: fanOut,
    async replay10k({ events }) {
      if (!recorded.has(events)) {
        const id = `bench-replay-${events}-${Date.now()}-${process.pid}`;
        await (await DBOS.startWorkflow(fns.chain, { workflowID: id })(events)).getResult();
        const steps = await DBOS.listWorkflowSteps(id);
        const maxId = Math.max(...steps.map((s) => s.functionID));
        recorded.set(events, { id, startStep: maxId });
      }
      const { id, startStep } = recorded.get(events);
      replayQueue ??= await DBOS.registerQueue('bench-replay', { minPollingIntervalMs: 10 });
      const t0 = performance.now();
      const h = await DBOS.forkWorkflow(id, startStep, { queueName: 'bench-replay' });
      await h.getResult({ pollingIntervalMs: 5 });
      const wall = performance.now() - t0;
      const st = await DBOS.getWorkflowStatus(h.workflowID);
      // Time from dequeue to completion, as recorded by DBOS: the replay itself, without the
      // queue's polling delay or the result poll.
      const ms = st?.completedAt && st?.dequeuedAt ? st.completedAt - st.dequeuedAt : wall;
      return { ms, events, extra: { wallMs: wall } };
    },
    async coldStart() {
      const t0 = performance.now();
      await init();
      await fns.twoStep.call(undefined);
      const ms = performance.now() - t0;
      await DBOS.shutdown();
      launched = false;
      return { ms };
    },
  },
};

// The seeded simulation. One seed makes one world: a few random workflows launched on one
// SQLite journal, a gateway whose completions the simulator delivers itself (in order, twice,
// or late), and a fault schedule (store write failures, torn last writes modelled as a failed
// commit followed by a restart, crashes after a durable commit, crashes with tool calls in
// flight). Everything runs in this process on a fake clock; a "restart" drops the kernel and the
// engine instance and reopens the store, exactly as a new process would find it. The store runs
// with `durability: 'normal'`: crashes are simulated in process, so no write ever depends on an
// fsync that a real power cut could undo. The checker (checker.mjs) is separate and only reads
// what was left on disk.
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StoreError } from '../../dist/hosts/core/store.js';
import { allEvents, buildHost, SqliteJournalStore } from '../durability/host.mjs';
import { randomTemplate, rng, simToolOutput } from './dag.mjs';

const terminal = new Set(['completed', 'failed', 'cancelled']);

class Crash extends Error {}

/** The fault schedule of a seed: probabilities per step or per commit. */
function faultSchedule(r) {
  return {
    writeFailure: r.pick([0, 0.03, 0.08]),
    tornWrite: r.pick([0, 0.03, 0.06]),
    crashAfterCommit: r.pick([0, 0.03, 0.06]),
    crash: r.pick([0, 0.03, 0.08]),
    duplicate: r.pick([0, 0.1, 0.25]),
    late: r.pick([0, 0.1, 0.25]),
    toolError: r.pick([0, 0.05]),
  };
}

/**
 * Runs one seed. Returns the world's directory (for the checker) and what happened.
 * `log` receives one line per decision when given (for `run.mjs --seed N --verbose`).
 */
export async function simulate(seed, { runs = 5, dir, log } = {}) {
  const r = rng(seed);
  const world = dir ?? mkdtempSync(join(tmpdir(), `sim-${seed}-`));
  const dbFile = join(world, 'workflow.db');
  const effectsFile = join(world, 'effects.jsonl');
  writeFileSync(effectsFile, '');
  const faults = faultSchedule(r);
  const say = (m) => log?.(`[seed ${seed}] ${m}`);
  const stats = { steps: 0, restarts: 0, writeFailures: 0, torn: 0, crashesAfterCommit: 0, duplicates: 0, late: 0, executions: 0, resolutions: 0 };
  let clock = 1_700_000_000_000;

  const gatewayEffects = { 'tool:safe-0': 'idempotent', 'tool:safe-1': 'idempotent', 'tool:safe-2': 'idempotent' };
  let pending = []; // requests dispatched by the live host, not yet executed
  let outcomes = []; // executed, outcome not yet delivered
  let delivered = []; // delivered once: candidates for duplicates
  let held = []; // outcomes kept back and delivered after a restart (late)
  let restartRequested = false;

  /** A store whose commits fail (nothing written), tear (fail, then the process dies) or die right after landing. */
  function faultyStore(inner) {
    return {
      commit(entries) {
        if (entries.length > 0 && r.chance(faults.writeFailure)) {
          stats.writeFailures += 1;
          say('store: write failure');
          throw new StoreError('store.io', 'simulated write failure');
        }
        if (entries.length > 0 && r.chance(faults.tornWrite)) {
          // SQLite commits atomically: a torn last write is a commit that did not land, then a restart.
          stats.torn += 1;
          restartRequested = true;
          say('store: torn write, restart');
          throw new StoreError('store.io', 'simulated torn write');
        }
        const rejected = inner.commit(entries);
        if (entries.length > 0 && r.chance(faults.crashAfterCommit)) {
          stats.crashesAfterCommit += 1;
          restartRequested = true;
          say('store: crash after a durable commit');
          throw new Crash('simulated crash after commit');
        }
        return rejected;
      },
      load: (id) => inner.load(id),
      readEvents: (id, after, limit) => inner.readEvents(id, after, limit),
      getRun: (id) => inner.getRun(id),
      listRuns: (f) => inner.listRuns(f),
      close: () => inner.close(),
    };
  }

  const gateway = {
    effects: () => gatewayEffects,
    execute(request) {
      pending.push(request);
      return Promise.resolve(undefined); // the simulator delivers the outcome itself
    },
  };

  let inner;
  let host;
  async function start() {
    inner = SqliteJournalStore.open(dbFile, { durability: 'normal', now: () => clock });
    host = await buildHost({ store: faultyStore(inner), gateway, now: () => clock, timers: false });
  }
  async function restart(why) {
    stats.restarts += 1;
    say(`restart (${why}); ${pending.length} requests and ${outcomes.length} outcomes were in this process`);
    // Whatever was in flight in the dead process is gone, except outcomes that already exist
    // outside it: some arrive late at the new process.
    for (const o of outcomes) if (r.chance(0.5)) held.push(o);
    pending = [];
    outcomes = [];
    inner.close();
    restartRequested = false;
    await start();
    for (const t of templates) {
      const rec = inner.getRun(t.runId);
      if (rec && !terminal.has(rec.status)) await settle(host.kernel.resume(t.runId, 'sim', { id: 'local', scopes: ['*'] }));
    }
  }

  /** Awaits a kernel call; store failures and simulated crashes are part of the world. */
  async function settle(promise) {
    try {
      return await promise;
    } catch (err) {
      if (err instanceof Crash || err instanceof StoreError || err?.code === 'store.io' || err?.code === 'store.conflict') return undefined;
      throw err;
    }
  }

  function execute(request) {
    stats.executions += 1;
    const declared = gatewayEffects[`tool:${request.name}`];
    const effect = request.effect === 'unknown' && declared ? declared : request.effect;
    appendFileSync(effectsFile, `${JSON.stringify({ invocationId: request.invocationId, runId: request.runId, tool: request.name, effect, reissued: request.reissued === true })}\n`);
    const fact = r.chance(faults.toolError)
      ? { type: 'capability-completed', invocationId: request.invocationId, ok: false, error: { code: 'tool.failed', message: 'simulated tool error', retryable: false } }
      : { type: 'capability-completed', invocationId: request.invocationId, ok: true, output: simToolOutput(request.name, request.input) };
    return { runId: request.runId, fact, request };
  }

  async function operator(runId) {
    const events = allEvents(inner, runId);
    const attention = new Map();
    for (const e of events) {
      if (e.type === 'node.needs-attention') attention.set(e.node.id, { invocationId: e.payload.invocationId, seq: e.seq });
      if (e.type === 'node.resolved') attention.delete(e.node.id);
    }
    const executed = new Set(
      (await import('node:fs')).readFileSync(effectsFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).invocationId),
    );
    // The operator names the unknown it looked at (its needs-attention seq), as docs/durability.md asks.
    for (const [nodeId, { invocationId, seq }] of attention) {
      const isForeach = events.some((e) => e.type === 'node.started' && e.node.id === nodeId && e.payload.foreach);
      const req = events.find((e) => e.type === 'capability.requested' && e.payload.invocationId === invocationId);
      stats.resolutions += 1;
      const resolution = !isForeach && executed.has(invocationId) ? { type: 'outcome-resolved', nodeId, resolution: 'succeeded', output: simToolOutput(req.payload.name, req.payload.input), by: 'sim-operator', attentionSeq: seq } : { type: 'outcome-resolved', nodeId, resolution: 'retry', by: 'sim-operator', attentionSeq: seq };
      say(`operator: ${resolution.resolution} ${runId}/${nodeId}`);
      await settle(host.kernel.deliver(runId, resolution, 'operator:sim'));
      if (restartRequested) return;
    }
  }

  // The world: random templates, compiled once on the first host.
  const templates = [];
  await start();
  for (let i = 0; i < runs; i++) {
    const template = randomTemplate(r, `wf-${seed}-${i}`);
    templates.push({ runId: `run-${seed}-${i}`, template, plan: host.compile(template) });
  }
  for (const t of templates) {
    // A launch whose commit failed is retried by its caller, under the same run id.
    for (let attempt = 0; attempt < 10 && !inner.getRun(t.runId); attempt++) {
      await settle(host.kernel.launch({ runId: t.runId, plan: t.plan, templateKey: t.plan.root, input: { v: r.int(0, 9) }, authority: { id: 'local', scopes: ['*'] } }));
      if (restartRequested) await restart('during launch');
    }
  }

  const stepsMax = 400;
  for (; stats.steps < stepsMax; stats.steps++) {
    clock += 1000;
    if (restartRequested) {
      await restart('fault');
      continue;
    }
    const open = templates.filter((t) => !terminal.has(inner.getRun(t.runId)?.status ?? 'completed'));
    if (open.length === 0 && pending.length === 0 && outcomes.length === 0) break;
    const roll = r.next();
    if (roll < faults.crash) {
      await restart('crash');
    } else if (pending.length > 0 && roll < 0.55) {
      // Execute one or a few requests (the tool takes effect now; the outcome travels back later).
      for (let k = r.int(1, 3); k > 0 && pending.length > 0; k--) outcomes.push(execute(pending.splice(r.int(0, pending.length - 1), 1)[0]));
    } else if (outcomes.length > 0 && roll < 0.85) {
      // Deliver one or several outcomes in one batch (several facts, one group commit).
      const batch = [];
      for (let k = r.int(1, 3); k > 0 && outcomes.length > 0; k--) batch.push(outcomes.splice(r.int(0, outcomes.length - 1), 1)[0]);
      for (const o of batch) {
        if (r.chance(faults.late)) {
          stats.late += 1;
          held.push(o);
          continue;
        }
        delivered.push(o);
      }
      await Promise.all(batch.filter((o) => !held.includes(o)).map((o) => settle(host.kernel.deliver(o.runId, o.fact))));
    } else if (delivered.length > 0 && r.chance(faults.duplicate)) {
      stats.duplicates += 1;
      const o = r.pick(delivered);
      say(`duplicate delivery of ${o.fact.invocationId}`);
      await settle(host.kernel.deliver(o.runId, o.fact));
    } else if (held.length > 0 && r.chance(0.5)) {
      const o = held.splice(r.int(0, held.length - 1), 1)[0];
      say(`late delivery of ${o.fact.invocationId}`);
      await settle(host.kernel.deliver(o.runId, o.fact));
    } else {
      // Nothing in transit for some runs: settle what needs a person, resume what is idle.
      for (const t of open) {
        const rec = inner.getRun(t.runId);
        const inTransit = pending.some((p) => p.runId === t.runId) || outcomes.some((o) => o.runId === t.runId);
        if (inTransit || !rec) continue;
        const events = allEvents(inner, t.runId);
        const paused = [...events].reverse().find((e) => e.type === 'run.paused' || e.type === 'run.resumed');
        if (rec.status === 'paused' && paused?.payload.reason === 'needs_attention') await operator(t.runId);
        else await settle(host.kernel.resume(t.runId, 'sim-watchdog', { id: 'local', scopes: ['*'] }));
        if (restartRequested) break;
      }
    }
  }
  inner.close();
  return { seed, dir: world, dbFile, effectsFile, runIds: templates.map((t) => t.runId), faults, stats };
}

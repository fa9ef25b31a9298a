// The parent side of the crash matrix: compiles the plans once, runs the child with one kill
// point, then reopens the store with the SDK (a new process as far as the journal can tell),
// resumes every run, settles unknown outcomes the way an operator would, and counts what the
// durability rules promise.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowRuntime } from '../../dist/hosts/node/runtime.js';
import { allEvents, buildHost, registryGateway, SqliteJournalStore } from './host.mjs';
import { makeTools, readEffects, scenarios, toolOutput } from './scenarios.mjs';

const childScript = new URL('./crash-child.mjs', import.meta.url).pathname;
const terminal = new Set(['completed', 'failed', 'cancelled']);

/** Compiles every scenario's plan once; returns the path of the file the children read. */
export async function compilePlans(root) {
  const host = await buildHost({ store: SqliteJournalStore.open(':memory:'), gateway: registryGateway({}) });
  const plans = {};
  for (const runs of Object.values(scenarios)) for (const r of runs) plans[r.runId] = host.compile(r.template);
  const file = join(root, 'plans.json');
  writeFileSync(file, JSON.stringify(plans));
  host.store.close();
  return file;
}

export function newCaseDir(root, label) {
  return mkdtempSync(join(root, `${label.replace(/[^a-z0-9]+/gi, '-')}-`));
}

/** Runs the child; resolves with how it ended and the kill point it reached (if any). */
export function runChild({ dir, scenario, plans, kill }) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [childScript, JSON.stringify({ dir, scenario, plans, kill })], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      const killFile = join(dir, 'kill.json');
      resolve({ code, signal, stderr, point: existsSync(killFile) ? JSON.parse(readFileSync(killFile, 'utf8')) : undefined });
    });
  });
}

export function readTrace(dir) {
  const file = join(dir, 'trace.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** Invocations requested and neither completed, cancelled nor abandoned, per the journal. */
export function inflightOf(events) {
  const inflight = new Map();
  for (const e of events) {
    const p = e.payload;
    if (e.type === 'capability.requested') inflight.set(p.invocationId, { invocationId: p.invocationId, nodeId: e.node.id, item: p.item, tool: p.name, effect: p.effect, input: p.input });
    if (e.type === 'capability.completed' || e.type === 'capability.cancelled' || e.type === 'capability.abandoned') inflight.delete(p.invocationId);
  }
  return [...inflight.values()];
}

/** Safe to repeat: the template or the gateway says so. */
export function isSafe(effect, tool, effects) {
  const declared = effects[`tool:${tool}`];
  return effect === 'read-only' || effect === 'idempotent' || declared === 'read-only' || declared === 'idempotent';
}

/**
 * The operator: for each node in needs_attention, look at the tool's own record (the side-effect
 * log). If the call took effect, record its result (`succeeded`); if it did not, `retry`. A
 * foreach node can only be retried (the engine refuses `succeeded` for one).
 */
async function settleAttention(rt, runId, effectsLog, tally) {
  const events = allEvents(rt.store, runId);
  const view = await rt.replay(runId, { mode: 'inspect' });
  for (const [nodeId, node] of Object.entries(view.nodes)) {
    if (node.status !== 'needs-attention') continue;
    const abandoned = events.filter((e) => e.type === 'capability.abandoned' && e.node.id === nodeId).map((e) => e.payload.invocationId);
    const requested = new Map(events.filter((e) => e.type === 'capability.requested').map((e) => [e.payload.invocationId, e.payload]));
    const last = abandoned[abandoned.length - 1];
    const ran = readEffects(effectsLog).some((x) => x.invocationId === last);
    const isForeach = events.some((e) => e.type === 'node.started' && e.node.id === nodeId && e.payload.foreach);
    if (!isForeach && ran) {
      const req = requested.get(last);
      await rt.resolve(runId, nodeId, { succeeded: toolOutput(req.name, req.input), by: 'operator' });
      tally.resolvedSucceeded += 1;
    } else {
      await rt.resolve(runId, nodeId, { retry: true, by: 'operator' });
      tally.resolvedRetry += 1;
      if (ran) tally.operatorRetriedAfterEffect += 1;
    }
  }
}

/**
 * Reopens the store of a killed child, resumes every run to the end and checks the rules.
 * Returns the counts of this case and a list of violations (empty when it held).
 */
export async function recoverAndCheck({ dir, scenario, plans, reference }) {
  const runs = scenarios[scenario];
  const dbFile = join(dir, 'workflow.db');
  const effectsLog = join(dir, 'effects.log');
  const acked = existsSync(join(dir, 'acks.log')) ? readFileSync(join(dir, 'acks.log'), 'utf8').split('\n').filter(Boolean) : [];
  const tools = makeTools(effectsLog, { chargeIdempotent: runs.some((r) => r.chargeIdempotent) });
  const effects = registryGateway({ tools }).effects();
  const tally = { runs: 0, lost: 0, unknown: 0, surfaced: 0, safeInflight: 0, autoRetried: 0, committedReexecuted: 0, unsafeReexecuted: 0, resolvedSucceeded: 0, resolvedRetry: 0, operatorRetriedAfterEffect: 0, replayed: 0, replayIdentical: 0, relaunched: 0 };
  const violations = [];

  // What the crash left behind, read before anything is resumed.
  const before = new Map();
  if (existsSync(dbFile)) {
    const raw = SqliteJournalStore.open(dbFile);
    for (const r of runs) {
      const rec = raw.getRun(r.runId);
      if (rec) before.set(r.runId, { status: rec.status, inflight: terminal.has(rec.status) ? [] : inflightOf(allEvents(raw, r.runId)) });
    }
    raw.close();
  }

  const planMap = JSON.parse(readFileSync(plans, 'utf8'));
  const rt = await WorkflowRuntime.open({ dir, tools, log: () => undefined });
  try {
    for (const r of runs) {
      tally.runs += 1;
      let outcome;
      if (!before.has(r.runId)) {
        if (acked.includes(r.runId)) {
          tally.lost += 1;
          violations.push(`${r.runId}: launch was acknowledged but the run is not in the store`);
          continue;
        }
        // Never accepted: the caller retries the launch, as it would after any failed call.
        tally.relaunched += 1;
        const plan = planMap[r.runId];
        const handle = await rt.launch({ type: 'plan', plan, templateKey: plan.root }, { runId: r.runId, input: r.input });
        outcome = await handle.settled();
      } else {
        const handle = await rt.resume(r.runId, { by: 'crash-matrix' });
        outcome = await handle.settled();
      }
      for (let round = 0; outcome.status === 'paused' && outcome.pausedReason === 'needs_attention' && round < 10; round++) {
        await settleAttention(rt, r.runId, effectsLog, tally);
        outcome = await rt.kernel.waitFor(r.runId, true);
      }
      if (outcome.status !== 'completed') {
        tally.lost += 1;
        violations.push(`${r.runId}: ended ${outcome.status}${outcome.pausedReason ? `(${outcome.pausedReason})` : ''}${outcome.error ? `: ${outcome.error.message}` : ''}`);
        continue;
      }
      if (reference && JSON.stringify(outcome.output) !== JSON.stringify(reference[r.runId])) violations.push(`${r.runId}: output ${JSON.stringify(outcome.output)} differs from the crash-free run's ${JSON.stringify(reference[r.runId])}`);
      const replay = await rt.replay(r.runId, { mode: "recorded" });
      tally.replayed += 1;
      if (replay.identical === true) tally.replayIdentical += 1;
      else violations.push(`${r.runId}: recorded replay diverged at ${JSON.stringify(replay.firstDivergence)}`);

      const events = allEvents(rt.store, r.runId);
      for (const inv of before.get(r.runId)?.inflight ?? []) {
        if (isSafe(inv.effect, inv.tool, effects)) {
          tally.safeInflight += 1;
          const reissued = events.some((e) => e.type === 'capability.requested' && e.payload.invocationId === inv.invocationId && e.payload.reissued === true);
          const completed = events.some((e) => e.type === 'capability.completed' && e.payload.invocationId === inv.invocationId);
          if (reissued && completed) tally.autoRetried += 1;
          else violations.push(`${r.runId}: safe invocation ${inv.invocationId} (${inv.tool}) in flight at the crash was not retried to completion`);
        } else {
          tally.unknown += 1;
          const abandoned = events.some((e) => e.type === 'capability.abandoned' && e.payload.invocationId === inv.invocationId);
          const attention = events.some((e) => e.type === 'node.needs-attention' && e.payload.invocationId === inv.invocationId);
          if (abandoned && attention) tally.surfaced += 1;
          else violations.push(`${r.runId}: unknown outcome of ${inv.invocationId} (${inv.tool}) was not surfaced as needs_attention`);
        }
      }
    }

    // Side effects: count executions per invocation id from the tools' own log.
    const counts = new Map();
    for (const x of readEffects(effectsLog)) counts.set(x.invocationId, { tool: x.tool, n: (counts.get(x.invocationId)?.n ?? 0) + 1 });
    const completedIds = new Map();
    const effectOf = new Map();
    for (const r of runs) {
      if (!rt.store.getRun(r.runId)) continue;
      for (const e of allEvents(rt.store, r.runId)) {
        if (e.type === 'capability.completed') completedIds.set(e.payload.invocationId, (completedIds.get(e.payload.invocationId) ?? 0) + 1);
        if (e.type === 'capability.requested') effectOf.set(e.payload.invocationId, e.payload.effect);
      }
    }
    for (const [id, n] of completedIds) if (n !== 1) violations.push(`${id}: ${n} capability.completed events`);
    for (const [id, { tool, n }] of counts) {
      if (n <= 1 || isSafe(effectOf.get(id), tool, effects)) continue;
      tally.unsafeReexecuted += 1;
      if (completedIds.has(id)) tally.committedReexecuted += 1;
      violations.push(`${id} (${tool}, unknown effect) ran ${n} times`);
    }
  } finally {
    await rt.close();
  }
  return { tally, violations };
}

export function tempRoot(prefix) {
  return mkdtempSync(join(tmpdir(), prefix));
}

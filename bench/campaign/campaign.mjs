#!/usr/bin/env node
// Fault campaign: what an operator of PostgreSQL workers lives through, repeated on demand.
// Starts `agent-workflow serve` workers on one fresh schema, queues runs, and meanwhile SIGKILLs
// and restarts workers, SIGSTOPs one past its lease, and terminates their database backends. Then
// it lets every run settle (resolving unknown outcomes through the CLI, as docs/durability.md
// says) and checks the store against the tools' own log. Prints a table and a JSON summary; exits
// 0 whatever the figures, non-zero only when the setup itself failed. See bench/README.md.
//
//   node build.mjs && npm run bench:campaign
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const env = (name, def) => (process.env[name] === undefined ? def : Number(process.env[name]));
const cfg = {
  runs: env('CAMPAIGN_RUNS', 360),
  workers: env('CAMPAIGN_WORKERS', 4),
  kills: env('CAMPAIGN_KILLS', 65),
  stops: env('CAMPAIGN_STOPS', 2),
  terminates: env('CAMPAIGN_TERMINATES', 48),
  windowMs: env('CAMPAIGN_WINDOW_MS', 120_000),
  leaseTtlMs: env('CAMPAIGN_LEASE_MS', 4_000),
  chargeMs: env('CAMPAIGN_CHARGE_MS', 400),
  maxRuns: env('CAMPAIGN_MAX_RUNS', 16),
  replaySample: env('CAMPAIGN_REPLAY_SAMPLE', 50),
  settleMs: env('CAMPAIGN_SETTLE_MS', 300_000),
  seed: env('CAMPAIGN_SEED', 1),
};
const pgBase = process.env.CAMPAIGN_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
const root = new URL('../../', import.meta.url).pathname;
const cli = join(root, 'dist/hosts/node/cli/main.js');
const hostModule = new URL('./host.mjs', import.meta.url).pathname;

function fail(message) {
  console.error(`campaign setup failed: ${message}`);
  process.exit(2);
}

// mulberry32: the fault schedule and the replay sample are the seed's.
let s = cfg.seed >>> 0;
const rand = () => {
  s = (s + 0x6d2b79f5) >>> 0;
  let t = s;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

if (!existsSync(cli)) fail(`${cli} is missing: run \`node build.mjs\` first`);
const schema = `campaign_${Date.now().toString(36)}`;
const store = `${pgBase}?schema=${schema}`;
const dir = mkdtempSync(join(tmpdir(), 'adw-campaign-'));
const oracle = join(dir, 'oracle.log');
writeFileSync(oracle, '');
const childEnv = { ...process.env, ORACLE_LOG: oracle, STATE_DIR: join(dir, 'state'), LEASE_TTL_MS: String(cfg.leaseTtlMs), CHARGE_MS: String(cfg.chargeMs) };

const admin = new pg.Client({ connectionString: pgBase });
try {
  await admin.connect();
} catch (e) {
  fail(`PostgreSQL at ${pgBase} is unreachable (${e.message})`);
}

const template = {
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: 'campaign-pay' },
  spec: {
    requires: ['tool:charge', 'tool:notify', 'approval'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'gate', uses: 'human.approval@1', config: { prompt: 'pay?' } },
      { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' }, inputs: { order: { source: 'input', path: '/order' } } },
      { id: 'notify', uses: 'tool.call@1', config: { tool: 'notify', idempotent: true }, inputs: { receipt: { source: 'output', nodeId: 'charge' } } },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [
      { from: 'start', to: 'gate' },
      { from: 'gate', to: 'charge' },
      { from: 'charge', to: 'notify' },
      { from: 'notify', to: 'end' },
    ],
  },
};

// --- processes -----------------------------------------------------------------------------
function runCli(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args, '--config', hostModule, '--store', store], { cwd: dir, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const workers = [];
const incarnations = [];
function startWorker(slot) {
  const appName = `${schema}_w${slot}`;
  const child = spawn(process.execPath, [cli, 'serve', '--store', store, '--config', hostModule, '--max-runs', String(cfg.maxRuns)], { cwd: dir, env: { ...childEnv, PGAPPNAME: appName }, stdio: ['ignore', 'pipe', 'pipe'] });
  const w = { slot, appName, child, out: '', err: '', stopped: false, exited: false, serving: false };
  child.stdout.on('data', (d) => {
    w.out += d;
    if (w.out.includes('"Serving"')) w.serving = true;
  });
  child.stderr.on('data', (d) => (w.err += d));
  incarnations.push(w);
  w.done = new Promise((r) => child.on('close', (code, signal) => {
    w.exited = true;
    r({ code, signal });
  }));
  workers[slot] = w;
  return w;
}

async function until(what, check, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const t0 = Date.now();
const load = { start: loadavg() };
const counts = { kills: 0, restarts: 0, stops: 0, terminates: 0, backendsTerminated: 0, unexpectedExits: 0 };
const unexpected = [];

// The first worker creates and migrates the schema; the others start after it serves.
startWorker(0);
try {
  await until('the first worker to serve', () => workers[0].serving || workers[0].exited, 60_000);
} catch (e) {
  fail(`${e.message}; its log: ${workers[0].err.slice(-2000)}`);
}
if (!workers[0].serving) fail(`the first worker exited: ${workers[0].err.slice(-2000)}`);
for (let i = 1; i < cfg.workers; i++) startWorker(i);
try {
  await until('every worker to serve', () => workers.every((w) => w.serving || w.exited), 60_000);
} catch (e) {
  fail(e.message);
}
if (workers.some((w) => w.exited)) fail(`a worker exited at start: ${workers.find((w) => w.exited).err.slice(-2000)}`);
const setupMs = Date.now() - t0;

// --- launches --------------------------------------------------------------------------------
let WorkflowRuntime;
try {
  ({ WorkflowRuntime } = await import(join(root, 'dist/hosts/node/index.js')));
} catch (e) {
  fail(`cannot import the SDK from dist/: ${e.message}`);
}
const host = (await import(hostModule)).default;
let runtime;
try {
  runtime = await WorkflowRuntime.open({ ...host, dir: join(dir, 'launcher'), store });
} catch (e) {
  fail(`the SDK could not open ${store}: ${e.message}`);
}
const launched = [];
const launchErrors = [];
const launchPhase = (async () => {
  const gap = cfg.windowMs / cfg.runs;
  for (let i = 0; i < cfg.runs; i++) {
    try {
      const h = await runtime.launch(template, { input: { order: i }, executionMode: 'background' });
      launched.push(h.runId);
    } catch (e) {
      launchErrors.push(`${e.code ?? ''} ${e.message}`);
    }
    await sleep(gap * (0.5 + rand()));
  }
})();
if (cfg.runs > 0) {
  await sleep(200);
  if (launched.length === 0 && launchErrors.length > 0) fail(`the first launch failed: ${launchErrors[0]}`);
}

// --- faults ----------------------------------------------------------------------------------
const live = () => workers.filter((w) => !w.exited && !w.stopped);
async function kill() {
  const w = pick(live());
  if (!w) return;
  w.expectedExit = true;
  w.child.kill('SIGKILL');
  await w.done;
  counts.kills++;
  await sleep(100 + rand() * 400);
  startWorker(w.slot);
  counts.restarts++;
}
async function stop() {
  const w = pick(live());
  if (!w) return;
  w.stopped = true;
  w.child.kill('SIGSTOP');
  counts.stops++;
  await sleep(cfg.leaseTtlMs * 1.5 + 1_000);
  w.child.kill('SIGCONT');
  w.stopped = false;
}
async function terminate() {
  const w = pick(live());
  if (!w) return;
  const r = await admin.query('SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity WHERE application_name = $1', [w.appName]);
  counts.terminates++;
  counts.backendsTerminated += r.rows.filter((x) => x.t === true).length;
}
const schedule = [
  ...Array.from({ length: cfg.kills }, () => ({ at: rand() * cfg.windowMs, act: kill })),
  ...Array.from({ length: cfg.stops }, () => ({ at: rand() * cfg.windowMs, act: stop })),
  ...Array.from({ length: cfg.terminates }, () => ({ at: rand() * cfg.windowMs, act: terminate })),
].sort((a, b) => a.at - b.at);
const faultStart = Date.now();
const pendingFaults = [];
for (const f of schedule) {
  const wait = faultStart + f.at - Date.now();
  if (wait > 0) await sleep(wait);
  // Kills and terminations one at a time; a stop runs beside them (its worker is left alone).
  const p = f.act().catch((e) => unexpected.push(`fault: ${e.message}`));
  if (f.act === stop) pendingFaults.push(p);
  else await p;
}
await Promise.all(pendingFaults);
await launchPhase;
const faultMs = Date.now() - faultStart;
load.afterFaults = loadavg();

// --- settle ----------------------------------------------------------------------------------
const terminal = new Set(['completed', 'failed', 'cancelled']);
const q = (sql, params) => admin.query(sql.replaceAll('S.', `"${schema}".`), params);
async function statuses() {
  const r = await q('SELECT run_id, status FROM S.runs WHERE run_id = ANY($1)', [launched]);
  return new Map(r.rows.map((x) => [x.run_id, x.status]));
}
async function eventsOf(runId) {
  const r = await q(`SELECT seq, convert_from(body, 'UTF8') AS b FROM S.events WHERE run_id = $1 ORDER BY seq`, [runId]);
  return r.rows.map((x) => JSON.parse(x.b));
}
const nodeOf = (e) => e.nodeId ?? e.node?.id ?? e.node ?? e.payload?.nodeId;
function oracleLines() {
  return readFileSync(oracle, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}
const resolutions = { succeeded: 0, retry: 0, refused: 0 };
const resolved = new Set();
const settleStart = Date.now();
for (;;) {
  const st = await statuses();
  const open = launched.filter((id) => !terminal.has(st.get(id)));
  if (open.length === 0 || Date.now() - settleStart > cfg.settleMs) break;
  const paused = open.filter((id) => st.get(id) === 'paused');
  for (const runId of paused) {
    const events = await eventsOf(runId);
    const attention = new Map();
    for (const e of events) {
      if (e.type === 'node.needs-attention') attention.set(nodeOf(e), e.seq);
      if (e.type === 'node.resolved') attention.delete(nodeOf(e));
    }
    for (const [nodeId, seq] of attention) {
      const key = `${runId}/${nodeId}/${seq}`;
      if (resolved.has(key)) continue;
      resolved.add(key);
      // The operator looks at the tool's own record: took effect → succeeded, else → retry.
      const tookEffect = oracleLines().some((o) => o.runId === runId && o.nodeId === nodeId && o.phase === 'done' && o.tool === 'charge' && !events.some((e) => e.type === 'capability.completed' && e.payload?.invocationId === o.invocationId));
      const args = tookEffect ? ['--succeeded', JSON.stringify({ charge: true, resolvedBy: 'operator' })] : ['--retry'];
      const r = await runCli(['resolve', runId, nodeId, ...args, '--attention-seq', String(seq), '--by', 'campaign-operator']);
      if ([0, 4].includes(r.code)) resolutions[tookEffect ? 'succeeded' : 'retry']++;
      else {
        resolutions.refused++;
        unexpected.push(`resolve ${runId} ${nodeId} exit ${r.code}: ${r.stdout.trim().slice(-300)} ${r.stderr.trim().slice(-300)}`);
      }
    }
  }
  await sleep(1_000);
}
const settleMs = Date.now() - settleStart;
load.afterSettle = loadavg();

// --- figures ---------------------------------------------------------------------------------
const st = await statuses();
const byStatus = {};
for (const id of launched) byStatus[st.get(id) ?? 'missing'] = (byStatus[st.get(id) ?? 'missing'] ?? 0) + 1;
const lost = launched.filter((id) => !terminal.has(st.get(id)));

const ev = await q(`SELECT run_id, convert_from(body, 'UTF8') AS b FROM S.events`);
const late = [];
const needsAttention = [];
const retriesByNode = new Map();
const completedInvocations = new Map();
for (const row of ev.rows) {
  const e = JSON.parse(row.b);
  if (e.type === 'capability.late') late.push(row.run_id);
  if (e.type === 'node.needs-attention') needsAttention.push(`${row.run_id}/${nodeOf(e)}`);
  if (e.type === 'node.resolved') {
    const k = `${row.run_id}/${nodeOf(e)}`;
    if (JSON.stringify(e.payload ?? {}).includes('retry')) retriesByNode.set(k, (retriesByNode.get(k) ?? 0) + 1);
  }
  if (e.type === 'capability.completed' && e.payload?.invocationId) completedInvocations.set(e.payload.invocationId, (completedInvocations.get(e.payload.invocationId) ?? 0) + 1);
}
const inbox = await q(`SELECT state, count(*)::int AS n FROM S.run_inbox GROUP BY state`);
const lateInbox = await q(`SELECT state, count(*)::int AS n FROM S.run_inbox WHERE command->>'type' = 'late-outcome' GROUP BY state`);

const lines = oracleLines();
const doneBy = (tool) => {
  const m = new Map();
  for (const o of lines) if (o.tool === tool && o.phase === 'done') m.set(`${o.runId}/${o.nodeId}`, [...(m.get(`${o.runId}/${o.nodeId}`) ?? []), o]);
  return m;
};
const charges = doneBy('charge');
const duplicates = [];
const duplicatesResolved = [];
for (const [k, list] of charges) {
  if (list.length < 2) continue;
  const allowed = 1 + (retriesByNode.get(k) ?? 0);
  (list.length > allowed ? duplicates : duplicatesResolved).push({ node: k, executions: list.length, retryResolutions: retriesByNode.get(k) ?? 0, invocations: list.map((o) => `${o.invocationId}@${o.attempt}/pid${o.pid}`) });
}
const sameInvocationTwice = [...new Set(lines.filter((o) => o.tool === 'charge' && o.phase === 'done').map((o) => o.invocationId))].filter((iv) => lines.filter((o) => o.tool === 'charge' && o.phase === 'done' && o.invocationId === iv).length > 1);
const notifyRepeats = [...doneBy('notify').values()].filter((l) => l.length > 1).length;
const chargedRuns = launched.filter((id) => charges.has(`${id}/charge`)).length;
const completedWithoutCharge = launched.filter((id) => st.get(id) === 'completed' && !charges.has(`${id}/charge`));

// Recorded replay of a sample of completed runs.
const completed = launched.filter((id) => st.get(id) === 'completed');
const sample = [];
const pool = [...completed];
while (sample.length < Math.min(cfg.replaySample, pool.length)) sample.push(pool.splice(Math.floor(rand() * pool.length), 1)[0]);
let identical = 0;
const diverged = [];
const replayStart = Date.now();
for (const id of sample) {
  try {
    const r = await runtime.replay(id, { mode: 'recorded' });
    if (r.identical === true) identical++;
    else diverged.push({ runId: id, firstDivergence: r.firstDivergence ?? r.differences?.[0] ?? null });
  } catch (e) {
    diverged.push({ runId: id, error: `${e.code ?? ''} ${e.message}` });
  }
}
const replayMs = Date.now() - replayStart;

// --- stop ------------------------------------------------------------------------------------
for (const w of workers) if (!w.exited) w.child.kill('SIGTERM');
const exits = await Promise.all(workers.map((w) => w.done));
for (const [i, x] of exits.entries()) if (x.code !== 0) unexpected.push(`worker ${i} stopped with ${x.code ?? x.signal}: ${workers[i].err.slice(-500)}`);
await runtime.close();
load.end = loadavg();
const warnLines = incarnations.map((w) => w.err).join('');

const summary = {
  schema,
  oracle,
  config: cfg,
  durationsMs: { setup: setupMs, faults: faultMs, settle: settleMs, replay: replayMs, total: Date.now() - t0 },
  loadavg: load,
  faults: counts,
  runs: {
    launched: launched.length,
    launchErrors: launchErrors.length,
    byStatus,
    lost: lost.length,
    lostRuns: lost.slice(0, 20).map((id) => ({ runId: id, status: st.get(id) ?? 'missing' })),
  },
  effects: {
    chargedRuns,
    completedWithoutCharge: completedWithoutCharge.length,
    duplicateCharges: duplicates.length,
    duplicateChargeDetails: duplicates.slice(0, 20),
    repeatedChargesWithRetryResolution: duplicatesResolved.length,
    sameInvocationChargedTwice: sameInvocationTwice.length,
    idempotentNotifyRepeats: notifyRepeats,
    invocationsCompletedTwiceInJournal: [...completedInvocations.values()].filter((n) => n > 1).length,
  },
  lateOutcomes: { events: late.length, runs: new Set(late).size, inbox: Object.fromEntries(lateInbox.rows.map((r) => [r.state, r.n])) },
  needsAttention: { events: needsAttention.length, runs: new Set(needsAttention.map((k) => k.split('/')[0])).size, resolutions },
  inbox: Object.fromEntries(inbox.rows.map((r) => [r.state, r.n])),
  replay: { sampled: sample.length, identical, diverged },
  workersLog: { incarnations: incarnations.length, connectionLost: (warnLines.match(/wake-up connection to the store lost/g) ?? []).length, connectionRestored: (warnLines.match(/wake-up connection to the store restored/g) ?? []).length },
  problems: unexpected.slice(0, 30),
};

const rows = [
  ['runs launched', summary.runs.launched],
  ['runs completed / failed / cancelled', `${byStatus.completed ?? 0} / ${byStatus.failed ?? 0} / ${byStatus.cancelled ?? 0}`],
  ['runs lost (not terminal)', summary.runs.lost],
  ['SIGKILL + restart', `${counts.kills} / ${counts.restarts}`],
  ['SIGSTOP past the lease', counts.stops],
  ['pg_terminate_backend (backends)', `${counts.terminates} (${counts.backendsTerminated})`],
  ['duplicate charges (no retry resolution)', summary.effects.duplicateCharges],
  ['charges repeated after a retry resolution', summary.effects.repeatedChargesWithRetryResolution],
  ['completed runs without a charge', summary.effects.completedWithoutCharge],
  ['idempotent notify executed again', notifyRepeats],
  ['late outcomes (capability.late)', `${late.length} in ${summary.lateOutcomes.runs} runs`],
  ['late outcomes posted to the inbox', Object.entries(summary.lateOutcomes.inbox).map(([k, v]) => `${v} ${k}`).join(', ') || '0'],
  ['needs_attention (events / runs)', `${needsAttention.length} / ${summary.needsAttention.runs}`],
  ['resolutions succeeded / retry / refused', `${resolutions.succeeded} / ${resolutions.retry} / ${resolutions.refused}`],
  ['recorded replay identical', `${identical}/${sample.length}`],
  ['durations fault / settle / total (s)', `${(faultMs / 1000).toFixed(1)} / ${(settleMs / 1000).toFixed(1)} / ${(summary.durationsMs.total / 1000).toFixed(1)}`],
  ['load average start → end', `${load.start.map((x) => x.toFixed(2)).join(' ')} → ${load.end.map((x) => x.toFixed(2)).join(' ')}`],
];
const width = Math.max(...rows.map((r) => r[0].length));
console.log(`\nfault campaign on ${store}`);
for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
console.log(JSON.stringify(summary));
await admin.end();
process.exit(0);

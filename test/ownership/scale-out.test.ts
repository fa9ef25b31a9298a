// Scale-out under crashes: four `agent-workflow serve` processes on one PostgreSQL schema, 1,000
// queued runs of two non-idempotent charges, workers SIGKILLed at random (bounded, seeded) and
// restarted at once, and an operator in this process that settles every unknown outcome from the
// tool's own log. The oracle: no run lost, no charge executed twice, every unknown outcome
// surfaced as needs_attention, and the recorded replay of completed runs identical.
//
// Reproduce a failure with the printed seed: SCALE_OUT_SEED=<seed>. SCALE_OUT_RUNS sets the run
// count (default 1,000).
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { isTerminalStatus } from '../../engine/protocol/statuses.js';
import { cli, hostModule, template } from './helpers.js';

const pgBase = 'postgres://postgres@127.0.0.1:5432/test';
const schema = `scale_out_${process.pid}_${Date.now() % 1_000_000}`;
const pgUrl = `${pgBase}?schema=${schema}`;

const RUNS = Number(process.env.SCALE_OUT_RUNS ?? 1000);
const WORKERS = 4;
const MAX_KILLS = 6;
const LEASE_TTL_MS = 3000;
const CHARGE_MS = 10;
const COMPLETION_DEADLINE_MS = 150_000;
const REPLAY_BUDGET_MS = 30_000;
const REPLAY_MIN_SAMPLE = 200;
const seed = Number(process.env.SCALE_OUT_SEED ?? Date.now() % 2 ** 31);

/** mulberry32: a small seeded PRNG, so a failing schedule of kills can be replayed. */
function prng(s: number): () => number {
  let a = s >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface LogEntry {
  tool: string;
  invocationId: string;
  phase: 'start' | 'done' | 'aborted';
  pid: number;
  at: number;
}

afterAll(async () => {
  const c = new Client({ connectionString: pgBase });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await c.end();
});

describe('scale-out: four workers on one PostgreSQL schema, killed at random', () => {
  it(`${RUNS} queued runs of two non-idempotent charges: none lost, none charged twice, every unknown outcome surfaced, replays identical`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adw-scale-'));
    const effectsLog = join(dir, 'effects.log');
    writeFileSync(effectsLog, '');
    const env = { ...process.env, EFFECTS_LOG: effectsLog, STATE_DIR: join(dir, 'state'), LEASE_TTL_MS: String(LEASE_TTL_MS), CHARGE_MS: String(CHARGE_MS) };
    // The operator's runtime has the same tools (logging to the same file), should it ever apply a command itself.
    process.env.EFFECTS_LOG = effectsLog;
    process.env.CHARGE_MS = String(CHARGE_MS);
    const host = (await import(hostModule)).default;
    const random = prng(seed);
    console.log(`scale-out: seed ${seed} (SCALE_OUT_SEED=${seed} to replay the kill schedule), schema ${schema}, dir ${dir}`);

    const rt = await WorkflowRuntime.open({ store: pgUrl, dir: join(dir, 'operator'), tools: host.tools, leaseTtlMs: LEASE_TTL_MS, log: () => undefined });
    const workers: (ChildProcess | undefined)[] = [];
    let spawned = 0;
    const startWorker = (slot: number) => {
      const n = spawned++;
      const out = openSync(join(dir, `worker-${n}.log`), 'a');
      const child = spawn(process.execPath, [cli, 'serve', '--store', pgUrl, '--config', hostModule, '--dir', join(dir, 'state')], { cwd: dir, env, stdio: ['ignore', out, out] });
      workers[slot] = child;
      return child;
    };
    const t0 = performance.now();
    try {
      const t = template(
        'two-charges',
        [
          { id: 'charge1', uses: 'tool.call@1', config: { tool: 'charge' } },
          { id: 'charge2', uses: 'tool.call@1', config: { tool: 'charge' } },
        ],
        [
          ['start', 'charge1'],
          ['charge1', 'charge2'],
          ['charge2', 'end'],
        ],
        { requires: ['tool:charge'], outputs: { first: { source: 'output', nodeId: 'charge1' }, second: { source: 'output', nodeId: 'charge2' } } },
      );
      const plan = await rt.compile(t);

      for (let i = 0; i < WORKERS; i++) startWorker(i);

      // Enqueue in batches while the workers come up and start claiming.
      const runIds: string[] = [];
      const enqueueStart = performance.now();
      for (let i = 0; i < RUNS; i += 50) {
        const batch = await Promise.all(Array.from({ length: Math.min(50, RUNS - i) }, (_, k) => rt.launch({ type: 'plan', plan }, { executionMode: 'background', input: { n: i + k } })));
        runIds.push(...batch.map((h) => h.runId));
      }
      const enqueueMs = performance.now() - enqueueStart;

      const readLog = (): LogEntry[] => {
        const text = readFileSync(effectsLog, 'utf8');
        // A line a worker is appending while this reads may be seen in part: only whole lines count.
        return text
          .slice(0, text.lastIndexOf('\n') + 1)
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l));
      };

      // Kills: bounded in number, spread over the work by progress (so they land while charges are
      // in flight however fast the machine is), at a random point of each stretch; each worker is
      // restarted at once.
      let kills = 0;
      let allDone = false;
      const killLog: string[] = [];
      const killer = (async () => {
        for (let k = 1; k <= MAX_KILLS && !allDone; k++) {
          const stretch = (RUNS * 2) / (MAX_KILLS + 1);
          const at = Math.floor(stretch * (k - 1) + stretch * (0.5 + random() * 0.5));
          while (!allDone && readLog().filter((e) => e.phase === 'start').length < at) await sleep(20);
          if (allDone) break;
          const slot = Math.floor(random() * WORKERS);
          const victim = workers[slot]!;
          const closed = new Promise((r) => victim.once('close', r));
          victim.kill('SIGKILL');
          await closed;
          kills += 1;
          killLog.push(`${((performance.now() - t0) / 1000).toFixed(1)}s slot ${slot} pid ${victim.pid} after ${at} charges started`);
          startWorker(slot);
        }
      })();

      // The operator: every run paused with needs_attention is settled from the tool's own log.
      const settled = new Set<string>();
      const pending = new Set<string>();
      const resolutions = { succeeded: 0, retry: 0, errors: [] as string[] };
      const readAll = async (runId: string) => {
        const events: any[] = [];
        for (let after = 0; ; ) {
          const page = await rt.readEvents(runId, { afterSeq: after, limit: 5000 });
          events.push(...page.events);
          after = page.lastSeq;
          if (!page.more) return events;
        }
      };
      const settle = async (runId: string, charged: Set<string>) => {
        const events = await readAll(runId);
        for (const e of events) {
          if (e.type !== 'node.needs-attention') continue;
          const key = `${runId}/${e.payload.invocationId}`;
          if (settled.has(key) || pending.has(key)) continue;
          // Resolved already (by an earlier round of this loop that the journal now shows).
          if (events.some((x) => x.type === 'node.resolved' && x.seq > e.seq && x.node?.id === e.node.id)) {
            settled.add(key);
            continue;
          }
          const ran = charged.has(e.payload.invocationId);
          pending.add(key);
          try {
            // Each resolution names the unknown it was decided on (its needs-attention event): a
            // node whose retried charge became unknown again is resolved for that second unknown.
            if (ran) {
              await rt.resolve(runId, e.node.id, { succeeded: { charged: 1 }, by: 'operator', attentionSeq: e.seq });
              resolutions.succeeded += 1;
            } else {
              await rt.resolve(runId, e.node.id, { retry: true, by: 'operator', attentionSeq: e.seq });
              resolutions.retry += 1;
            }
            settled.add(key);
          } catch (err) {
            resolutions.errors.push(`${key}: ${(err as { code?: string }).code} ${(err as Error).message}`);
          } finally {
            pending.delete(key);
          }
        }
      };

      const deadline = Date.now() + COMPLETION_DEADLINE_MS;
      let terminalCount = 0;
      let lastProgress = '';
      while (Date.now() < deadline) {
        const records = await rt.listRuns({ limit: RUNS * 2 });
        terminalCount = records.filter((r) => isTerminalStatus(r.status)).length;
        if (terminalCount >= RUNS) break;
        const attention = records.filter((r) => r.status === 'paused');
        const charged = new Set(attention.length ? readLog().filter((x) => x.tool === 'charge' && x.phase === 'start').map((x) => x.invocationId) : []);
        for (let i = 0; i < attention.length; i += 8) await Promise.all(attention.slice(i, i + 8).map((r) => settle(r.runId, charged).catch((err) => resolutions.errors.push(`${r.runId}: ${(err as Error).message}`))));
        const progress = `${terminalCount} terminal, ${attention.length} paused`;
        if (progress !== lastProgress) appendFileSync(join(dir, 'progress.log'), `${((performance.now() - t0) / 1000).toFixed(1)}s ${progress}\n`);
        lastProgress = progress;
        await sleep(250);
      }
      allDone = true;
      const runMs = performance.now() - t0;
      await killer;

      // ---------------------------------------------------------------- the oracle
      const records = new Map((await rt.listRuns({ limit: RUNS * 2 })).map((r) => [r.runId, r]));
      const completed = runIds.filter((id) => records.get(id)?.status === 'completed');
      const notCompleted = runIds.filter((id) => records.get(id)?.status !== 'completed').map((id) => `${id}: ${records.get(id)?.status}`);

      const journals = new Map<string, any[]>();
      for (let i = 0; i < runIds.length; i += 16) await Promise.all(runIds.slice(i, i + 16).map(async (id) => journals.set(id, await readAll(id))));

      const log = readLog();
      const starts = new Map<string, number>();
      for (const x of log) if (x.tool === 'charge' && x.phase === 'start') starts.set(x.invocationId, (starts.get(x.invocationId) ?? 0) + 1);
      const duplicates = [...starts].filter(([, n]) => n > 1).map(([id, n]) => `${id} started ${n} times`);

      const runOfInvocation = new Map<string, string>();
      const violations: string[] = [];
      let takeovers = 0;
      let surfaced = 0;
      let late = 0;
      for (const [runId, events] of journals) {
        if (events.some((e) => e.type === 'run.resumed' && e.payload?.afterRestart)) takeovers += 1;
        const completions = new Map<string, number>();
        for (const e of events) {
          if (e.type === 'capability.requested') runOfInvocation.set(e.payload.invocationId, runId);
          if (e.type === 'capability.completed') completions.set(e.payload.invocationId, (completions.get(e.payload.invocationId) ?? 0) + 1);
          if (e.type === 'capability.late') late += 1;
          if (e.type === 'capability.abandoned') {
            const attention = events.some((x) => x.type === 'node.needs-attention' && x.seq > e.seq && x.payload.invocationId === e.payload.invocationId);
            if (attention) surfaced += 1;
            else violations.push(`${runId}: ${e.payload.invocationId} abandoned without node.needs-attention`);
          }
        }
        for (const [id, n] of completions) if (n > 1) violations.push(`${runId}: ${id} has ${n} capability.completed`);
      }
      // A charge that started after the journal abandoned its invocation would be a second effect
      // the operator could not see (it decided from a log without it).
      const abandonedAt = new Map<string, number>();
      for (const events of journals.values()) for (const e of events) if (e.type === 'capability.abandoned') abandonedAt.set(e.payload.invocationId, Date.parse(e.occurredAt));
      const startedAfterAbandon = log.filter((x) => x.tool === 'charge' && x.phase === 'start' && abandonedAt.has(x.invocationId) && x.at > abandonedAt.get(x.invocationId)!);
      for (const x of startedAfterAbandon) violations.push(`${x.invocationId}: charge started by pid ${x.pid} after the invocation was abandoned`);
      if (startedAfterAbandon.length) {
        // The journals of those runs, kept beside the effects log for whoever reads the failure.
        const runsOf = startedAfterAbandon.map((x) => runOfInvocation.get(x.invocationId));
        writeFileSync(join(dir, 'violations.json'), JSON.stringify(runsOf.map((id) => ({ runId: id, events: id ? journals.get(id) : undefined })), null, 1));
      }
      for (const id of starts.keys()) {
        const runId = runOfInvocation.get(id);
        if (!runId) {
          violations.push(`${id}: charged (log start) but not requested in any run's journal`);
          continue;
        }
        const events = journals.get(runId)!;
        const completions = events.filter((e) => e.type === 'capability.completed' && e.payload.invocationId === id).length;
        const abandoned = events.some((e) => e.type === 'capability.abandoned' && e.payload.invocationId === id);
        if (completions !== 1 && !abandoned) violations.push(`${runId}: ${id} charged but has ${completions} capability.completed and no capability.abandoned`);
      }

      // Recorded replay of completed runs: all of them if the budget allows, else a random sample.
      const order = [...completed];
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [order[i], order[j]] = [order[j], order[i]];
      }
      const replayStart = performance.now();
      let replayed = 0;
      const diverged: string[] = [];
      for (const id of order) {
        if (replayed >= REPLAY_MIN_SAMPLE && performance.now() - replayStart > REPLAY_BUDGET_MS) break;
        const report = await rt.replay(id, { mode: 'recorded' });
        replayed += 1;
        if (report.identical !== true) diverged.push(`${id}: ${JSON.stringify(report.firstDivergence)}`);
      }
      const replayMs = performance.now() - replayStart;

      const table = {
        seed,
        runs: RUNS,
        'runs completed': completed.length,
        'runs lost': RUNS - completed.length,
        kills,
        'worker processes started': spawned,
        'takeovers (run.resumed afterRestart)': takeovers,
        'unknown outcomes surfaced': surfaced,
        'late outcomes recorded': late,
        'operator resolutions (succeeded)': resolutions.succeeded,
        'operator resolutions (retry)': resolutions.retry,
        'operator errors': resolutions.errors.length,
        'charge executions': [...starts.values()].reduce((a, b) => a + b, 0),
        'duplicate charges': duplicates.length,
        'charges started after abandon': startedAfterAbandon.length,
        'oracle violations': violations.length,
        'replays identical': `${replayed - diverged.length} of ${replayed} (${replayed === completed.length ? 'all' : 'random sample'}, ${(replayMs / 1000).toFixed(1)} s)`,
        'enqueue (s)': +(enqueueMs / 1000).toFixed(1),
        'wall time to all terminal (s)': +(runMs / 1000).toFixed(1),
        'runs/s': +((RUNS / runMs) * 1000).toFixed(1),
        'load average (1, 5, 15 min)': loadavg()
          .map((x) => x.toFixed(2))
          .join(' '),
      };
      console.log(`scale-out kills: ${killLog.join('; ') || 'none'}`);
      console.table(table);
      if (resolutions.errors.length) console.log(`operator errors (first 5):\n${resolutions.errors.slice(0, 5).join('\n')}`);

      expect(notCompleted.slice(0, 10), `runs not completed (of ${notCompleted.length}); seed ${seed}`).toEqual([]);
      expect(duplicates, `seed ${seed}`).toEqual([]);
      expect(violations.slice(0, 10), `oracle violations (of ${violations.length}); seed ${seed}`).toEqual([]);
      expect(diverged.slice(0, 10), `recorded replays that diverged; seed ${seed}`).toEqual([]);
      expect(kills).toBeGreaterThan(0);
    } finally {
      await Promise.all(
        workers.map(async (w) => {
          if (!w || w.exitCode !== null || w.signalCode !== null) return;
          const closed = new Promise((r) => w.once('close', r));
          w.kill('SIGTERM');
          const t = setTimeout(() => w.kill('SIGKILL'), 5000);
          await closed;
          clearTimeout(t);
        }),
      );
      await rt.close();
    }
  }, 240_000);
});

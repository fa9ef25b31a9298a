// SIGKILL at every boundary of a 5-turn agent loop whose tool has an unknown effect: before and
// after every store commit and every gateway call (model turns and tool calls). After each kill
// the store is reopened with the SDK in this process, the run resumed, unknown tool outcomes
// settled as an operator would (from the tool's own log), and the oracles checked: the fake
// model's request log (no turn asked for again once its outcome was journaled) and the tool's
// effect log (no charge ran twice), plus recorded replay and the crash-free output.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/runtime.js';
// @ts-expect-error plain ESM helpers shared with the child process
import { allEvents, buildHost, registryGateway, SqliteJournalStore } from './host.mjs';
// @ts-expect-error plain ESM helpers shared with the child process
import { agentRegistry, chargeOutput, readEffectsLog, readModelLog, runId, template } from './agent-fixture.mjs';

type Kill = { kind: 'commit' | 'gateway'; phase: 'before' | 'after'; nth: number };
const childScript = new URL('./agent-crash-child.mjs', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'agent-crash-'));
let planFile = '';

function runChild(dir: string, kill?: Kill): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [childScript, JSON.stringify({ dir, plan: planFile, kill })], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
}

const readTrace = (dir: string) => (existsSync(join(dir, 'trace.jsonl')) ? readFileSync(join(dir, 'trace.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

/** Invocations requested and not settled, per the journal a crash left. */
function inflightOf(events: any[]): Map<string, { kind: string; effect: string }> {
  const inflight = new Map<string, { kind: string; effect: string }>();
  for (const e of events) {
    if (e.type === 'capability.requested') inflight.set(e.payload.invocationId, { kind: e.payload.kind, effect: e.payload.effect });
    if (e.type === 'capability.completed' || e.type === 'capability.cancelled' || e.type === 'capability.abandoned') inflight.delete(e.payload.invocationId);
  }
  return inflight;
}

beforeAll(async () => {
  const host = await buildHost({ store: SqliteJournalStore.open(':memory:'), gateway: registryGateway({}) });
  planFile = join(root, 'plan.json');
  writeFileSync(planFile, JSON.stringify(host.compile(template)));
  host.store.close();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('SIGKILL at every boundary of a 5-turn agent loop', () => {
  it('never asks the model again for a journaled turn, never repeats a charge, surfaces unknown charges', async () => {
    // The crash-free run: its output, and the commits and gateway calls to kill around.
    const clean = join(root, 'clean');
    rmSync(clean, { recursive: true, force: true });
    (await import('node:fs')).mkdirSync(clean);
    const first = await runChild(clean);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const reference = JSON.parse(readFileSync(join(clean, 'outcome.json'), 'utf8'));
    expect(reference).toMatchObject({ status: 'completed', output: { report: 'charged 4 times' } });
    expect(readModelLog(clean).map((r: any) => r.turn)).toEqual([1, 2, 3, 4, 5]);
    expect(readEffectsLog(clean).map((r: any) => r.n)).toEqual([1, 2, 3, 4]);
    const trace = readTrace(clean);
    const points: Kill[] = trace.flatMap((t: any) => (['before', 'after'] as const).map((phase) => ({ kind: t.at, phase, nth: t.nth })));
    expect(trace.filter((t: any) => t.at === 'gateway').length).toBe(9);

    const tally = { points: 0, killed: 0, modelTurnsAskedAgain: 0, unknownSurfaced: 0, resolvedSucceeded: 0, resolvedRetry: 0 };
    const violations: string[] = [];
    for (const kill of points) {
      const label = `${kill.kind}-${kill.phase}-${kill.nth}`;
      const dir = mkdtempSync(join(root, `${label}-`));
      const child = await runChild(dir, kill);
      tally.points += 1;
      if (child.signal === 'SIGKILL') tally.killed += 1;
      else violations.push(`${label}: the child was not killed (${child.code} ${child.stderr})`);

      // What the crash left: the invocations in flight, and which model turns had a journaled outcome.
      const raw = SqliteJournalStore.open(join(dir, 'workflow.db'));
      const before = raw.getRun(runId) ? allEvents(raw, runId) : [];
      raw.close();
      const inflight = inflightOf(before);
      const journaledTurns = new Set(before.filter((e: any) => e.type === 'capability.completed').map((e: any) => e.payload.invocationId));
      const modelRequestsBefore = readModelLog(dir).length;

      const rt = await WorkflowRuntime.open({ dir, log: () => undefined, ...agentRegistry(dir) });
      try {
        let outcome;
        if (before.length === 0) {
          const plan = JSON.parse(readFileSync(planFile, 'utf8'));
          outcome = await (await rt.launch({ type: 'plan', plan, templateKey: plan.root }, { runId, input: { order: 'o-17' } })).settled();
        } else {
          outcome = await (await rt.resume(runId, { by: 'crash-test' })).settled();
        }
        for (let round = 0; outcome.status === 'paused' && round < 5; round++) {
          // The operator reads the tool's own log: a charge that ran is recorded as succeeded.
          const events = allEvents(rt.store, runId);
          const abandoned = events.filter((e: any) => e.type === 'capability.abandoned').map((e: any) => e.payload.invocationId);
          const last = abandoned[abandoned.length - 1];
          const ran = readEffectsLog(dir).find((x: any) => x.invocationId === last);
          if (ran) {
            await rt.resolve(runId, 'agent', { succeeded: chargeOutput(ran), by: 'operator' });
            tally.resolvedSucceeded += 1;
          } else {
            await rt.resolve(runId, 'agent', { retry: true, by: 'operator' });
            tally.resolvedRetry += 1;
          }
          outcome = await rt.kernel.waitFor(runId, true);
        }
        if (JSON.stringify({ status: outcome.status, output: outcome.output }) !== JSON.stringify({ status: reference.status, output: reference.output })) {
          violations.push(`${label}: ended ${JSON.stringify(outcome)}`);
        }
        const replay = await rt.replay(runId, { mode: 'recorded' });
        if (replay.identical !== true) violations.push(`${label}: recorded replay diverged at ${JSON.stringify(replay.firstDivergence)}`);

        // Model oracle: a turn is asked for again only when its outcome was not journaled.
        const requests = readModelLog(dir);
        const perTurn = new Map<string, number>();
        for (const r of requests) perTurn.set(r.invocationId, (perTurn.get(r.invocationId) ?? 0) + 1);
        for (const [id, n] of perTurn) {
          if (n === 1) continue;
          tally.modelTurnsAskedAgain += 1;
          if (journaledTurns.has(id) || n > 2) violations.push(`${label}: model turn ${id} was asked for ${n} times, its outcome journaled before the crash: ${journaledTurns.has(id)}`);
        }
        if (perTurn.size !== 5) violations.push(`${label}: ${perTurn.size} distinct model turns`);
        if (requests.length - modelRequestsBefore > 5) violations.push(`${label}: ${requests.length - modelRequestsBefore} model requests after the restart`);

        // Tool oracle: each charge ran exactly once.
        const charges = readEffectsLog(dir);
        const byCall = new Map<number, number>();
        for (const c of charges) byCall.set(c.n, (byCall.get(c.n) ?? 0) + 1);
        if (JSON.stringify([...byCall].sort()) !== JSON.stringify([[1, 1], [2, 1], [3, 1], [4, 1]])) violations.push(`${label}: charges ${JSON.stringify([...byCall])}`);

        // A charge in flight at the crash was surfaced, never run again on a guess.
        const after = allEvents(rt.store, runId);
        for (const [id, inv] of inflight) {
          if (inv.kind !== 'tool') continue;
          const surfaced = after.some((e: any) => e.type === 'capability.abandoned' && e.payload.invocationId === id) && after.some((e: any) => e.type === 'node.needs-attention' && e.payload.invocationId === id);
          if (surfaced) tally.unknownSurfaced += 1;
          else violations.push(`${label}: the unknown charge ${id} was not surfaced as needs_attention`);
        }
      } finally {
        await rt.close();
      }
    }
    console.log(`agent crash matrix: ${JSON.stringify(tally)}`);
    expect(violations).toEqual([]);
    expect(tally.killed).toBe(tally.points);
    // Every charge's window was hit: before its request was journaled as done, the operator saw it.
    expect(tally.unknownSurfaced).toBeGreaterThanOrEqual(4);
    expect(tally.modelTurnsAskedAgain).toBeGreaterThan(0);
  }, 600_000);
});

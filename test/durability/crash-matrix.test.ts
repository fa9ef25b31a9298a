// The crash matrix: a child process runs a scenario and SIGKILLs itself at one point — before
// or after every store commit, inside the SQLite transaction of every commit, before or after
// every tool execution, around the interval checkpoint — then this process reopens the store
// with the SDK, resumes every run and settles unknown outcomes as an operator would.
//
// `capability.completed` and `node.output-committed` of a tool node are decided in the same
// activation and land in the same commit: there is no boundary between them to crash at. The
// boundaries that exist around them are covered: before that commit (the outcome is only in
// memory) and after it (the output is durable, the next request is not).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsPerRow } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { checkpointInlineMax } from '../../dist/hosts/node/stores/sqlite/migrations.js';
// @ts-expect-error plain ESM helpers shared with the child process
import { compilePlans, newCaseDir, readTrace, recoverAndCheck, runChild, tempRoot } from './crash-harness.mjs';

type Kill = { kind: 'commit' | 'mid-commit' | 'gateway'; phase?: 'before' | 'after'; nth: number; row?: number; match?: string };
type Tally = Record<string, number>;

const root = tempRoot('crash-matrix-');
let plans = '';
const totals: Tally = {};
const categories = new Map<string, number>();

beforeAll(async () => {
  plans = await compilePlans(root);
});

/** Every kill point of a scenario, from the commits and tool calls of its crash-free run. */
function killPoints(scenario: string, trace: any[]): Kill[] {
  const commits = trace.filter((t) => t.at === 'commit');
  const calls = trace.filter((t) => t.at === 'gateway');
  const out: Kill[] = [];
  if (scenario === 'checkpoint') {
    const cp = { nth: 1, match: 'checkpoint-running' };
    // Every commit writes at least two rows: its run's and one of events (crash-child.mjs).
    out.push({ kind: 'commit', phase: 'before', ...cp }, { kind: 'commit', phase: 'after', ...cp }, { kind: 'mid-commit', row: 1, ...cp }, { kind: 'mid-commit', row: 2, ...cp });
    // The second commit and the last but one (outcomes folded into their request's commit make the count vary).
    for (const nth of new Set([2, commits.length - 1].filter((n) => n >= 2))) out.push({ kind: 'commit', phase: 'before', nth }, { kind: 'commit', phase: 'after', nth }, { kind: 'mid-commit', nth, row: 2 });
    for (const nth of [10, 90]) out.push({ kind: 'gateway', phase: 'before', nth }, { kind: 'gateway', phase: 'after', nth });
    return out;
  }
  for (const c of commits) {
    // The rows the commit writes, as crash-child.mjs counts them: per run its row in `runs`, a
    // row in `checkpoints` when it takes a large checkpoint (schema v10), then its events in rows
    // of up to `eventsPerRow` (schema v9).
    const rows = c.entries.reduce((n: number, e: any) => n + 1 + (e.checkpointBytes > checkpointInlineMax ? 1 : 0) + Math.ceil(e.types.length / eventsPerRow), 0);
    out.push({ kind: 'commit', phase: 'before', nth: c.commit }, { kind: 'commit', phase: 'after', nth: c.commit }, { kind: 'mid-commit', nth: c.commit, row: 1 });
    if (rows > 2) out.push({ kind: 'mid-commit', nth: c.commit, row: Math.ceil(rows / 2) });
  }
  for (const g of calls) out.push({ kind: 'gateway', phase: 'before', nth: g.call }, { kind: 'gateway', phase: 'after', nth: g.call });
  return out;
}

/** The named boundaries a kill point covers, from what the child saw when it killed itself. */
function boundaries(point: any): string[] {
  if (point.kind === 'gateway') return [point.phase === 'before' ? 'requested durable, tool not run' : 'tool returned, capability.completed not committed'];
  const types = new Set<string>(point.entries.flatMap((e: any) => e.types));
  const where = point.kind === 'mid-commit' ? 'inside' : point.phase;
  const out: string[] = [];
  if (types.has('capability.requested')) out.push(`${where} the commit holding capability.requested`);
  if (types.has('capability.completed')) out.push(`${where} the commit holding capability.completed + node.output-committed`);
  if (point.entries.some((e: any) => e.checkpoint)) out.push(`${where} a checkpoint commit`);
  if (point.entries.some((e: any) => e.checkpoint && e.status === 'running')) out.push(`${where} an interval checkpoint commit (run still running)`);
  if (types.has('node.item-committed') || types.has('node.item-started')) out.push(`${where} a foreach item commit`);
  const runIds = point.entries.map((e: any) => e.runId);
  if (new Set(runIds).size > 1) out.push(`${where} a group commit of several runs`);
  // Outcomes ready before their request's commit was written, folded into it (docs/durability.md).
  if (new Set(runIds).size < runIds.length) out.push(`${where} a commit folding activations of one run`);
  if (point.kind === 'mid-commit') out.push('mid-transaction');
  return out;
}

async function inPool<T>(items: T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

function add(into: Tally, from: Tally): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}

describe('crash matrix (SIGKILL at every commit boundary, then resume)', () => {
  for (const scenario of ['mixed', 'safe', 'checkpoint']) {
    it(`${scenario}: no run lost, no committed effect repeated, every unknown outcome surfaced`, async () => {
      const refDir = newCaseDir(root, `${scenario}-reference`);
      const ref = await runChild({ dir: refDir, scenario, plans });
      expect(ref.code, ref.stderr).toBe(0);
      const { readFileSync } = await import('node:fs');
      const reference = Object.fromEntries(JSON.parse(readFileSync(`${refDir}/outcomes.json`, 'utf8')).map((o: any) => [o.runId, o.output]));
      const kills = killPoints(scenario, readTrace(refDir));
      const tally: Tally = {};
      const violations: string[] = [];
      await inPool(kills, 2, async (kill) => {
        const label = `${scenario}-${kill.kind}-${kill.phase ?? `row${kill.row}`}-${kill.match ?? 'n'}${kill.nth}`;
        const dir = newCaseDir(root, label);
        const child = await runChild({ dir, scenario, plans, kill });
        if (child.signal !== 'SIGKILL' || !child.point) {
          violations.push(`${label}: the kill point was not reached (exit ${child.code ?? child.signal}) ${child.stderr}`);
          return;
        }
        for (const b of boundaries(child.point)) categories.set(b, (categories.get(b) ?? 0) + 1);
        const result = await recoverAndCheck({ dir, scenario, plans, reference });
        add(tally, { cases: 1, ...result.tally });
        for (const v of result.violations) violations.push(`${label}: ${v}`);
      });
      add(totals, tally);
      console.log(`crash matrix [${scenario}] ${JSON.stringify(tally)}`);
      expect(violations).toEqual([]);
      expect(tally.cases).toBe(kills.length);
      expect(tally.lost).toBe(0);
      expect(tally.committedReexecuted).toBe(0);
      expect(tally.unsafeReexecuted).toBe(0);
      expect(tally.surfaced).toBe(tally.unknown);
      expect(tally.autoRetried).toBe(tally.safeInflight);
      expect(tally.replayIdentical).toBe(tally.replayed);
      if (scenario === 'mixed') expect(tally.unknown).toBeGreaterThan(0);
      if (scenario !== 'mixed') expect(tally.unknown).toBe(0);
      expect(tally.safeInflight).toBeGreaterThan(0);
    }, 600_000);
  }

  it('covered every named boundary', () => {
    const needed = [
      'before the commit holding capability.requested',
      'after the commit holding capability.requested',
      'inside the commit holding capability.requested',
      'requested durable, tool not run',
      'tool returned, capability.completed not committed',
      'before the commit holding capability.completed + node.output-committed',
      'after the commit holding capability.completed + node.output-committed',
      'before an interval checkpoint commit (run still running)',
      'inside an interval checkpoint commit (run still running)',
      'after an interval checkpoint commit (run still running)',
      'before a checkpoint commit',
      'after a checkpoint commit',
      'before a foreach item commit',
      'inside a foreach item commit',
      'after a foreach item commit',
      'inside a group commit of several runs',
      'before a commit folding activations of one run',
      'inside a commit folding activations of one run',
      'after a commit folding activations of one run',
      'mid-transaction',
    ];
    console.log(`crash matrix boundaries:\n${[...categories].map(([k, v]) => `  ${String(v).padStart(3)}  ${k}`).join('\n')}`);
    for (const b of needed) expect(categories.get(b) ?? 0, b).toBeGreaterThan(0);
  });
});

afterAll(() => {
  const t = totals;
  const pct = t.unknown ? Math.round((100 * (t.surfaced ?? 0)) / t.unknown) : 100;
  console.log(
    [
      'crash matrix totals',
      `  kill points            ${t.cases ?? 0}`,
      `  runs checked           ${t.runs ?? 0} (relaunched after a kill before run.accepted: ${t.relaunched ?? 0})`,
      `  runs lost              ${t.lost ?? 0}`,
      `  committed side effects re-executed  ${t.committedReexecuted ?? 0}`,
      `  unknown outcomes       ${t.unknown ?? 0}, surfaced as needs_attention ${t.surfaced ?? 0} (${pct}%)`,
      `  safe calls in flight   ${t.safeInflight ?? 0}, retried automatically to completion ${t.autoRetried ?? 0}`,
      `  operator resolutions   succeeded ${t.resolvedSucceeded ?? 0}, retry ${t.resolvedRetry ?? 0} (retry after the effect had happened, foreach items: ${t.operatorRetriedAfterEffect ?? 0})`,
      `  recorded replays       ${t.replayIdentical ?? 0}/${t.replayed ?? 0} identical`,
    ].join('\n'),
  );
});

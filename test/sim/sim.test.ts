// The seeded simulation in CI: seeds 1..100, five random workflows each (500 runs), split over
// two processes (one per core). Any failing seed is printed with the command that reproduces it.
import { spawn } from 'node:child_process';
import { expect, it } from 'vitest';

const runScript = new URL('./run.mjs', import.meta.url).pathname;
const ranges = [
  { from: 1, count: 50 },
  { from: 51, count: 50 },
];
const runsPerSeed = 5;

function runRange(from: number, count: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [runScript, '--from', String(from), '--count', String(count), '--runs', String(runsPerSeed)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, out }));
  });
}

it('simulation: 100 seeds x 5 random runs, 0 checker failures', async () => {
  const results = await Promise.all(ranges.map((r) => runRange(r.from, r.count)));
  let runs = 0;
  for (const [i, r] of results.entries()) {
    console.log(`seeds ${ranges[i].from}..${ranges[i].from + ranges[i].count - 1}:\n${r.out}`);
    const totals = /sim: seeds .*?(\{.*\})/.exec(r.out);
    if (totals) runs += JSON.parse(totals[1]).runs;
  }
  for (const r of results) expect(r.out).toContain('sim: 0 checker failures');
  for (const r of results) expect(r.code).toBe(0);
  expect(runs).toBeGreaterThanOrEqual(500);
}, 600_000);

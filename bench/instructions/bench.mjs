#!/usr/bin/env node
// Engine instructions per activation, counted by valgrind's callgrind: the figure to steer by on
// a shared machine, because other load does not move it. bench/instructions/probe.mjs drives
// 2-step runs through one EngineInstance (the built component, the transpiled bindings, an
// in-memory host); two counts that differ only in the number of measured runs are subtracted,
// which cancels start-up and warm-up. Node runs with a fixed hash layout and on one thread so the
// counts repeat; each pair is repeated and the median taken.
//
// The two counts differ by 600 runs (1,800 activations): V8 still tiers up and collects now and
// then after the warm-up, and a one-time cost of ~100 M instructions that falls between the two
// counts would add ~0.7 M per activation to a pair that differs by 150 activations only (the
// earlier 10 / 60 runs gave 2.6–3.3 M for builds that cost 2.1 M over 1,800 activations).
//
//   node bench/instructions/bench.mjs [--pairs N] [--json]      (needs valgrind; `node build.mjs` first)
//   ENGINE_DIR=<another dist/component> node bench/instructions/bench.mjs    (another build of the engine)
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const probe = fileURLToPath(new URL('./probe.mjs', import.meta.url));
const target = 700_000;
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

/** Instructions of one `node probe.mjs --runs N` under callgrind, and the activations it counted. */
function count(runs, warmup) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-instructions-'));
  const args = ['--tool=callgrind', `--callgrind-out-file=${join(dir, 'out')}`, '--smc-check=all-non-file', `--log-file=${join(dir, 'log')}`,
    process.execPath, '--single-threaded', '--hash-seed=1', '--random-seed=1', probe, '--runs', String(runs), '--warmup', String(warmup)];
  return new Promise((resolve, reject) => {
    execFile('valgrind', args, { maxBuffer: 1 << 20 }, (err, stdout) => {
      try {
        if (err) throw new Error(`valgrind failed: ${err.message}`);
        const collected = readFileSync(join(dir, 'log'), 'utf8').match(/Collected : (\d+)/);
        if (!collected) throw new Error('valgrind printed no instruction count');
        const { activations } = JSON.parse(stdout.trim().split('\n').pop());
        resolve({ instructions: Number(collected[1]), activations });
      } catch (e) {
        reject(e);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

export async function runInstructionsBench(options = {}) {
  const quick = options.quick ?? process.env.BENCH_QUICK === '1';
  const pairs = options.pairs ?? (quick ? 1 : 3);
  const warmup = options.warmup ?? 100;
  const [few, many] = options.runs ?? [100, 700];
  const perActivation = [];
  const loadAtStart = load();
  for (let i = 0; i < pairs; i++) {
    const [a, b] = await Promise.all([count(few, warmup), count(many, warmup)]);
    perActivation.push((b.instructions - a.instructions) / (b.activations - a.activations));
  }
  perActivation.sort((x, y) => x - y);
  const median = perActivation[perActivation.length >> 1];
  return [{
    section: 'engine instructions per activation (2-step run, callgrind)',
    instructionsPerActivation: Math.round(median),
    pairs: perActivation.map(Math.round),
    target,
    met: median <= target,
    loadAverage: `${loadAtStart} → ${load()}`,
    cores: cpus().length,
  }];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const pairsAt = process.argv.indexOf('--pairs');
  const rows = await runInstructionsBench(pairsAt > 0 ? { pairs: Number(process.argv[pairsAt + 1]) } : {});
  if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
  else console.table(rows);
}

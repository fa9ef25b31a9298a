#!/usr/bin/env node
// The simulation's command line. Each seed builds one world, runs it under its fault schedule,
// then the checker reopens what it left on disk. The seed of every failure is printed.
//
//   npm run test:sim -- --seed 42            reproduce one seed (add --verbose for its decisions)
//   npm run test:sim -- --count 100 --from 1 run seeds 1..100
//   npm run test:sim -- --runs 5             workflows per seed (default 5)
import { rmSync } from 'node:fs';
import { checkWorld } from './checker.mjs';
import { simulate } from './sim.mjs';

export async function runSeeds(seeds, { runs = 5, verbose = false, keep = false, print = console.log } = {}) {
  const failures = [];
  const totals = { seeds: 0, runs: 0, completed: 0, failed: 0, paused: 0, events: 0, replayed: 0, restarts: 0, writeFailures: 0, torn: 0, crashesAfterCommit: 0, duplicates: 0, late: 0, resolutions: 0 };
  for (const seed of seeds) {
    let violations;
    let world;
    try {
      world = await simulate(seed, { runs, log: verbose ? print : undefined });
      const checked = await checkWorld(world);
      violations = checked.violations;
      totals.seeds += 1;
      for (const k of ['runs', 'completed', 'failed', 'paused', 'events', 'replayed']) totals[k] += checked.stats[k];
      for (const k of ['restarts', 'writeFailures', 'torn', 'crashesAfterCommit', 'duplicates', 'late', 'resolutions']) totals[k] += world.stats[k];
    } catch (err) {
      violations = [`the simulation threw: ${err?.stack ?? err}`];
    }
    if (violations.length > 0) {
      failures.push({ seed, violations });
      print(`seed ${seed} FAILED (${violations.length}): reproduce with: npm run test:sim -- --seed ${seed} --verbose`);
      for (const v of violations.slice(0, 20)) print(`  ${v}`);
      if (world) print(`  world kept in ${world.dir}`);
    } else {
      if (world && !keep) rmSync(world.dir, { recursive: true, force: true });
      if (verbose) print(`seed ${seed} ok ${JSON.stringify(world.stats)}`);
    }
  }
  return { failures, totals };
}

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : process.argv[i + 1];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const seed = arg('seed');
  const runs = Number(arg('runs', 5));
  const seeds = seed !== undefined ? [Number(seed)] : Array.from({ length: Number(arg('count', 20)) }, (_, i) => Number(arg('from', 1)) + i);
  const { failures, totals } = await runSeeds(seeds, { runs, verbose: process.argv.includes('--verbose'), keep: process.argv.includes('--keep') });
  console.log(`sim: seeds ${seeds[0]}..${seeds[seeds.length - 1]} (${seeds.length}), ${JSON.stringify(totals)}`);
  console.log(failures.length === 0 ? 'sim: 0 checker failures' : `sim: ${failures.length} failing seed(s): ${failures.map((f) => f.seed).join(' ')}`);
  process.exit(failures.length === 0 ? 0 : 1);
}

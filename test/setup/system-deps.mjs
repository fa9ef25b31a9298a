#!/usr/bin/env node
// `npm test` runs this first (the `pretest` script): it makes a fresh machine able to run the
// whole suite by itself. System packages the tests need:
//   chromium (/usr/bin/chromium)  the browser replay tests drive it through playwright-core
//   spin, gcc                     the model-checking test compiles and runs a SPIN verifier
// Missing ones are installed with apt-get when running as root; otherwise the script stops and
// prints the exact command to run. PostgreSQL, when installed but not running, is started.
import { execFileSync, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The first executable `name` on PATH, or undefined. */
function which(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

const needs = [
  { pkg: 'chromium', present: () => existsSync('/usr/bin/chromium'), why: 'the browser replay tests' },
  { pkg: 'spin', present: () => which('spin') !== undefined, why: 'the model-checking test' },
  { pkg: 'gcc', present: () => which('gcc') !== undefined, why: 'the model-checking test (compiles the SPIN verifier)' },
];

function say(message) {
  process.stderr.write(`test setup: ${message}\n`);
}

const missing = needs.filter((n) => !n.present());
if (missing.length > 0) {
  const pkgs = missing.map((n) => n.pkg).join(' ');
  const command = `apt-get update -qq && apt-get install -y -qq ${pkgs}`;
  for (const n of missing) say(`${n.pkg} is missing (${n.why})`);
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root || !which('apt-get')) {
    say(`install it${missing.length > 1 ? ' (them)' : ''} first, then run npm test again:\n\n    sudo sh -c '${command}'\n`);
    process.exit(1);
  }
  say(`installing: ${command}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // apt-get's progress is not the tests' business; its errors still reach stderr.
  execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
  execFileSync('apt-get', ['install', '-y', '-qq', ...missing.map((n) => n.pkg)], { stdio: ['ignore', 'ignore', 'inherit'], env });
  const still = missing.filter((n) => !n.present());
  if (still.length > 0) {
    say(`still missing after apt-get: ${still.map((n) => n.pkg).join(' ')}`);
    process.exit(1);
  }
}

// PostgreSQL: started when installed as a Debian cluster and not answering.
const pgIsReady = which('pg_isready');
const pgCtlCluster = which('pg_ctlcluster');
if (pgIsReady && pgCtlCluster && spawnSync(pgIsReady, ['-h', '127.0.0.1', '-q'], { stdio: 'ignore' }).status !== 0) {
  const versions = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql').sort() : [];
  if (versions.length > 0) {
    const args = ['--skip-systemctl-redirect', versions[0], 'main', 'start'];
    say(`starting PostgreSQL: pg_ctlcluster ${args.join(' ')}`);
    const started = spawnSync(pgCtlCluster, args, { stdio: 'inherit' });
    if (started.status !== 0) say(`could not start PostgreSQL (exit ${started.status}); run as root: pg_ctlcluster ${args.join(' ')}`);
  }
}

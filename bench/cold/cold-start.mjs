// Cold start of the Node host: a new process to its first completed 2-step run, which is the
// `coldStart` workload of bench/systems/agent-dag-workflow.mjs (import the package,
// `WorkflowRuntime.open` on a new SQLite file, `launch(template)`, await the result) run by
// bench/lib/child.mjs in fresh processes, as `npm run bench` runs it. Prints, per tree, the
// median and range of the time from process start to the completed run and of the child's CPU
// time, with the load average before and after.
//
//   node bench/cold/cold-start.mjs                          # 15 processes of this tree
//   node bench/cold/cold-start.mjs --runs 30 --against DIR  # this tree and DIR alternately
//
// DIR is another copy of the package root with its dist/ built and its bench/ (an earlier commit,
// for a before/after): the two trees are run alternately (A B A B …) so that both see the same
// machine state. The child inherits the environment; NODE_EXTRA_CA_CERTS, when set, makes every
// Node process parse those certificates at start-up (on this machine the whole system bundle:
// ≈ 416 M instructions, more than twice the rest of Node's own start-up), so it is printed.
// Not part of `npm test`.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stats } from '../lib/util.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const thisRoot = resolve(here, '..', '..');
const childScript = join(thisRoot, 'bench', 'lib', 'child.mjs');

function parseArgs(argv) {
  const out = { runs: 15, against: undefined, label: 'this tree', againstLabel: undefined };
  for (let i = 0; i < argv.length; i++) {
    const [k, v] = argv[i].includes('=') ? [argv[i].slice(0, argv[i].indexOf('=')), argv[i].slice(argv[i].indexOf('=') + 1)] : [argv[i], undefined];
    const val = () => v ?? argv[++i];
    if (k === '--runs') out.runs = Number(val());
    else if (k === '--against') out.against = resolve(val());
    else if (k === '--label') out.label = val();
    else if (k === '--against-label') out.againstLabel = val();
    else throw new Error(`unknown option ${argv[i]}; usage: node bench/cold/cold-start.mjs [--runs N] [--against DIR] [--label L] [--against-label L]`);
  }
  if (!Number.isInteger(out.runs) || out.runs < 1) throw new Error('--runs must be a positive integer');
  return out;
}

/** One fresh process of `root`'s system module; resolves to { ms, cpuMs } or throws. */
function coldStart(root) {
  const dir = mkdtempSync(join(tmpdir(), 'adw-cold-'));
  const system = join(root, 'bench', 'systems', 'agent-dag-workflow.mjs');
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [childScript, system, 'coldStart', '{}', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      rmSync(dir, { recursive: true, force: true });
      const ok = /@@BENCH_RESULT (.*)/.exec(out);
      if (ok) return resolvePromise(JSON.parse(ok[1]));
      reject(new Error(`${root}: child exited ${code}: ${(out + err).slice(-800)}`));
    });
  });
}

const fmt = (s, unit = 'ms') => (s ? `${s.median.toFixed(0)} ${unit} (${s.min.toFixed(0)}–${s.max.toFixed(0)})` : 'n/a');
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

const args = parseArgs(process.argv.slice(2));
const trees = [{ label: args.label, root: thisRoot }];
if (args.against) trees.push({ label: args.againstLabel ?? args.against, root: args.against });
const loadBefore = load();
process.stdout.write(`cold start, ${args.runs} fresh process(es) per tree, load average ${loadBefore} (1/5/15 min), ${process.env.NODE_EXTRA_CA_CERTS ? 'NODE_EXTRA_CA_CERTS set' : 'NODE_EXTRA_CA_CERTS unset'}, node ${process.version}\n`);
// One unmeasured start per tree first: the first process after a build reads its files from disk.
for (const t of trees) await coldStart(t.root);
const samples = trees.map(() => ({ ms: [], cpuMs: [] }));
for (let r = 0; r < args.runs; r++) {
  // Alternate which tree goes first, so that neither always follows the other.
  const order = r % 2 === 0 ? trees.map((_, i) => i) : trees.map((_, i) => i).reverse();
  for (const i of order) {
    const v = await coldStart(trees[i].root);
    samples[i].ms.push(v.ms);
    if (v.cpuMs !== undefined) samples[i].cpuMs.push(v.cpuMs);
  }
}
for (const [i, t] of trees.entries()) {
  process.stdout.write(`${t.label.padEnd(24)} to the first completed run: ${fmt(stats(samples[i].ms))}, CPU ${fmt(stats(samples[i].cpuMs))}\n`);
}
process.stdout.write(`load average after: ${load()}\n`);

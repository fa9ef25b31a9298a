// The run-ownership protocol checked by spin (spec/ownership.pml, spec/README.md).
//
// The real model must verify with 0 errors over its full (bounded) state space; the mutant, the
// same source built with `-DFENCING=0` (the store no longer checks the commit's epoch), must make
// spin report an assertion violation. Both are built and searched concurrently in a temp dir:
// `spin -a`, `gcc -O2 -DSAFETY -o pan pan.c`, `./pan`. Missing tools fail the test, never skip it.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const model = new URL('../../spec/ownership.pml', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'ownership-model-'));

type Run = { errors: number; states: number; depth: number; seconds: number; wallSeconds: number; complete: boolean; out: string };

function requireTool(cmd: string, args: string[], pkg: string): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new Error(`\`${cmd}\` is not available (${r.error?.message ?? `exit ${r.status}`}): install the Debian package \`${pkg}\` (apt-get install -y ${pkg}); .ci/run does this on CI`);
  }
}

function exec(cmd: string, args: string[], cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, out }));
  });
}

/** spin -a, gcc, pan in its own directory; returns what pan reported. */
async function verify(name: string, defines: string[], opt: '-O2' | '-O0'): Promise<Run> {
  const dir = join(root, name);
  mkdirSync(dir);
  copyFileSync(model, join(dir, 'ownership.pml'));
  const gen = await exec('spin', [...defines, '-a', 'ownership.pml'], dir);
  if (gen.code !== 0) throw new Error(`spin -a (${name}) failed:\n${gen.out}`);
  // -DSAFETY: every property is an assertion. MEMLIM (MB) bounds a runaway search.
  const cc = await exec('gcc', [opt, '-DSAFETY', '-DMEMLIM=1024', '-w', '-o', 'pan', 'pan.c'], dir);
  if (cc.code !== 0) throw new Error(`gcc (${name}) failed:\n${cc.out}`);
  const t0 = performance.now();
  const pan = await exec('./pan', ['-m10000'], dir);
  const wallSeconds = (performance.now() - t0) / 1000;
  const num = (re: RegExp) => {
    const m = re.exec(pan.out);
    if (!m) throw new Error(`unexpected pan output (${name}):\n${pan.out}`);
    return Number(m[1]);
  };
  return {
    errors: num(/errors: (\d+)/),
    states: num(/(\d+) states, stored/),
    depth: num(/depth reached (\d+)/),
    seconds: num(/elapsed time ([\d.e+-]+) seconds/),
    wallSeconds,
    complete: !/max search depth too small|out of memory/.test(pan.out),
    out: pan.out,
  };
}

// Built once, on first use, by whichever test runs first; a missing tool fails every test (a
// failing beforeAll would only mark them skipped).
let both: Promise<{ real: Run; mutant: Run }> | undefined;
function runs(): Promise<{ real: Run; mutant: Run }> {
  both ??= (async () => {
    requireTool('spin', ['-V'], 'spin');
    requireTool('gcc', ['--version'], 'gcc');
    // The mutant's search stops after a few thousand states: compiling it without optimisation
    // saves more time (on a loaded 2-core box, several seconds) than -O2 would win back.
    const [real, mutant] = await Promise.all([verify('model', [], '-O2'), verify('mutant', ['-DFENCING=0'], '-O0')]);
    const line = (n: string, r: Run) =>
      `  ${n.padEnd(24)} errors ${r.errors}, ${r.states} states stored, depth ${r.depth}, pan ${r.seconds}s (wall ${r.wallSeconds.toFixed(2)}s)`;
    console.log(`spin: spec/ownership.pml\n${line('model', real)}\n${line('mutant (-DFENCING=0)', mutant)}`);
    return { real, mutant };
  })();
  return both;
}

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('run ownership model (spin)', () => {
  it('the model satisfies P1 (one committer per epoch), P2 (no automatic re-execution), P3 (late receipts wake nothing)', async () => {
    const { real } = await runs();
    expect(real.errors, real.out).toBe(0);
    expect(real.complete, real.out).toBe(true);
    expect(real.states).toBeGreaterThan(100_000);
  }, 120_000);

  it('the mutant without the fencing check violates P1: spin finds a counterexample', async () => {
    const { mutant } = await runs();
    expect(mutant.errors, mutant.out).toBeGreaterThan(0);
    expect(mutant.out).toMatch(/assertion violated \(p1_committer==me\)/);
  }, 120_000);
});

import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemoteEvaluator, parseServeArgs, planMemoryBudget, RemoteEvaluatorError, type MemoryBudget } from '../../sandbox/service/index.js';
import { adversarialCases } from './adversarial-cases.js';
import { buildDir, buildServiceBundles } from './build-worker.js';

const token = 'process-test-token-42';
const rssCapMb = 400;
let child: ChildProcess;
let url: string;

beforeAll(async () => {
  await buildServiceBundles();
  const entry = `${buildDir}/serve.js`;
  writeFileSync(entry, "import { runSandboxServeCommand } from './service.js';\nprocess.exitCode = await runSandboxServeCommand(process.argv.slice(2));\n");
  child = spawn(process.execPath, [entry, '--port', '0', '--workers', '2', '--queue', '16', '--rss-max-mb', String(rssCapMb)], {
    env: { ...process.env, AGENT_WORKFLOW_SANDBOX_TOKEN: token },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  url = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`service exited with ${code}`)));
  });
}, 30_000);
afterAll(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
});

/** VmRSS (resident now) and VmHWM (the kernel's high-water mark of resident memory) of a process, in MiB. */
function memoryMb(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => {
    const m = new RegExp(`${name}:\\s+(\\d+) kB`).exec(status);
    if (!m) throw new Error(`no ${name}`);
    return Number(m[1]) / 1024;
  };
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

function rssMb(pid: number): number {
  return memoryMb(pid).rss;
}

/** Samples VmRSS every ~20 ms until stopped; VmHWM covers whatever falls between samples. */
function sampleRss(pid: number): { stop(): { sampledPeak: number; hwm: number; samples: number } } {
  let sampledPeak = 0;
  let samples = 0;
  const timer = setInterval(() => {
    try {
      sampledPeak = Math.max(sampledPeak, rssMb(pid));
      samples++;
    } catch {
      // the process may be gone
    }
  }, 20);
  return {
    stop() {
      clearInterval(timer);
      return { sampledPeak, hwm: memoryMb(pid).hwm, samples };
    },
  };
}

interface ServiceStats {
  queued: number;
  running: number;
  ready: number;
  recycling: number;
  replaced: number;
  rssBytes: number;
  memoryBudget: MemoryBudget | null;
}

async function stats(): Promise<ServiceStats> {
  const res = await fetch(`${url}/v1/stats`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as ServiceStats;
}

/** Waits until no job is queued or running and every worker has been replaced and is ready. */
async function idle(): Promise<ServiceStats> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const s = await stats();
    if (s.queued === 0 && s.running === 0 && s.recycling === 0) return s;
    if (Date.now() > deadline) throw new Error(`service not idle: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('service process (sandbox serve)', () => {
  it('prints a loopback URL', () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('answers every adversarial case with its expected code and stays under its RSS cap', async () => {
    const remote = createRemoteEvaluator({ url, token });
    const pid = child.pid!;
    const sampler = sampleRss(pid);
    try {
      const before = await idle();
      const budget = before.memoryBudget!;
      const mib = (n: number) => (n / 1024 / 1024).toFixed(0);
      console.log(
        `service RSS at start: ${rssMb(pid).toFixed(0)} MiB; budget: main ${mib(budget.mainBytes)}, per worker ${mib(budget.workerBytes)}, module wasm max ${mib(budget.wasmMemoryBytesMax)}, memoryBytes max ${mib(budget.memoryBytesMax)} MiB`,
      );
      for (let round = 0; round < 2; round++) {
        const results = await Promise.all(adversarialCases.map((c) => remote.evaluate(c.source, c.input ?? 'null', c.limits)));
        results.forEach((r, i) => {
          const c = adversarialCases[i];
          const got = r.ok ? { ok: r.output } : { code: r.error.code };
          expect(got, c.name).toEqual('code' in c.expect ? c.expect : { ok: (c.expect as { ok: string }).ok });
        });
      }
      console.log(`service RSS after the cases: ${rssMb(pid).toFixed(0)} MiB`);
      // Heap bombs, at 8 MiB and at the largest memory this service allows (32 MiB).
      const bomb = 'const a = []; for (;;) a.push(new Array(4096).fill(7))';
      const bombs = [8 * 1024 * 1024, budget.memoryBytesMax].flatMap((memoryBytes) =>
        Array.from({ length: 4 }, () => remote.evaluate(bomb, 'null', { memoryBytes })),
      );
      for (const r of await Promise.all(bombs)) expect(r.ok ? 'ok' : r.error.code).toBe('script.memory');
      // More than the budget allows is refused, not run with a lower limit.
      await expect(remote.evaluate('return 1', 'null', { memoryBytes: budget.memoryBytesMax + 1 })).rejects.toMatchObject({ code: 'service.limit-exceeded', status: 400 });
      expect(await remote.evaluate('return input * 2', '21')).toEqual({ ok: true, output: '42', fuelUsed: 0 });

      const after = await idle();
      const rss = rssMb(pid);
      const peak = sampler.stop();
      console.log(
        `service RSS after the adversarial rounds (idle, ${after.replaced} workers replaced): ${rss.toFixed(0)} MiB; peak ${peak.sampledPeak.toFixed(0)} MiB sampled every 20 ms (${peak.samples} samples), VmHWM ${peak.hwm.toFixed(0)} MiB (cap ${rssCapMb})`,
      );
      expect(after.replaced).toBeGreaterThan(0);
      expect(rss).toBeLessThan(rssCapMb);
      expect(peak.sampledPeak).toBeLessThan(rssCapMb);
      expect(peak.hwm).toBeLessThan(rssCapMb);
      expect(await remote.evaluate('return input * 2', '21')).toEqual({ ok: true, output: '42', fuelUsed: 0 });
    } catch (e) {
      if (e instanceof RemoteEvaluatorError) throw new Error(`${e.code}: ${e.message}`);
      throw e;
    } finally {
      sampler.stop();
      await remote.close();
    }
  }, 120_000);

  it('shuts down cleanly on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 20_000);
});

describe('sandbox serve arguments', () => {
  it('parses every flag', () => {
    expect(parseServeArgs(['--port', '8080', '--host=::1', '--token-file', '/t', '--insecure-no-auth', '--workers', '3', '--queue', '0', '--rss-max-mb', '100'])).toEqual({
      port: 8080,
      host: '::1',
      tokenFile: '/t',
      insecureNoAuth: true,
      workers: 3,
      queueLength: 0,
      rssBytesMax: 100 * 1024 * 1024,
    });
  });
  it('splits an RSS cap into per-worker budgets, or refuses a cap that is too small', () => {
    const mib = 1024 * 1024;
    const plan = planMemoryBudget(400 * mib, 2, 50 * mib, 32 * mib);
    if (typeof plan === 'string') throw new Error(plan);
    expect(plan.mainBytes + 2 * plan.workerBytes).toBeLessThanOrEqual(400 * mib);
    expect(plan.wasmMemoryBytesMax).toBeLessThan(plan.workerBytes);
    expect(plan.memoryBytesMax).toBeGreaterThanOrEqual(32 * mib);
    expect(plan.memoryBytesMax).toBeLessThan(plan.wasmMemoryBytesMax);
    expect(planMemoryBudget(200 * mib, 2, 50 * mib, 32 * mib)).toMatch(/too small for 2 worker\(s\).*needs at least \d+ MiB/);
  });
  it('rejects bad flags', () => {
    for (const argv of [['--port'], ['--port', '70000'], ['--workers', '0'], ['--queue', '-1'], ['--bogus'], ['--insecure-no-auth=yes']]) {
      expect(typeof parseServeArgs(argv), argv.join(' ')).toBe('string');
    }
  });
});

import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemoteEvaluator, parseServeArgs, RemoteEvaluatorError } from '../../sandbox/service/index.js';
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

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  if (!m) throw new Error('no VmRSS');
  return Number(m[1]) / 1024;
}

describe('service process (sandbox serve)', () => {
  it('prints a loopback URL', () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('answers every adversarial case with its expected code and stays under its RSS cap', async () => {
    const remote = createRemoteEvaluator({ url, token });
    try {
      console.log(`service RSS at start: ${rssMb(child.pid!).toFixed(0)} MiB`);
      for (let round = 0; round < 1; round++) {
        const results = await Promise.all(adversarialCases.map((c) => remote.evaluate(c.source, c.input ?? 'null', c.limits)));
        results.forEach((r, i) => {
          const c = adversarialCases[i];
          const got = r.ok ? { ok: r.output } : { code: r.error.code };
          expect(got, c.name).toEqual('code' in c.expect ? c.expect : { ok: (c.expect as { ok: string }).ok });
        });
      }
      console.log(`service RSS after the cases: ${rssMb(child.pid!).toFixed(0)} MiB`);
      // Heap bombs at the largest memory this service allows.
      const bombs = Array.from({ length: 4 }, () => remote.evaluate('const a = []; for (;;) a.push(new Array(4096).fill(7))', 'null', { memoryBytes: 32 * 1024 * 1024 }));
      for (const r of await Promise.all(bombs)) expect(r.ok ? 'ok' : r.error.code).toBe('script.memory');
      expect(await remote.evaluate('return input * 2', '21')).toEqual({ ok: true, output: '42', fuelUsed: 0 });
      const rss = rssMb(child.pid!);
      console.log(`service RSS after the adversarial rounds: ${rss.toFixed(0)} MiB (cap ${rssCapMb})`);
      expect(rss).toBeLessThan(rssCapMb);
    } catch (e) {
      if (e instanceof RemoteEvaluatorError) throw new Error(`${e.code}: ${e.message}`);
      throw e;
    } finally {
      await remote.close();
    }
  }, 60_000);

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
  it('rejects bad flags', () => {
    for (const argv of [['--port'], ['--port', '70000'], ['--workers', '0'], ['--queue', '-1'], ['--bogus'], ['--insecure-no-auth=yes']]) {
      expect(typeof parseServeArgs(argv), argv.join(' ')).toBe('string');
    }
  });
});

// Resource test: the router entry inside a cgroup v1 memory limit of 128 MiB runs 16 concurrent
// runs of the examples (8 weekly-report, 8 echo; their tools run in process) on the edge
// profile. Asserts: every run completed, no OOM kill. Prints: cgroup memory peak, process peak
// RSS, p95 of the journal commit latency. Skipped, with the reason printed, only where a child
// memory cgroup cannot be created.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { childMemoryCgroup, runInCgroup, tempDir } from './helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cliJs = path.join(root, 'dist/hosts/router/cli.js');
const fixtures = path.join(root, 'test/router/fixtures');
const limitBytes = 128 * 1024 * 1024;

const cgroup = childMemoryCgroup('router-test', limitBytes);
if (cgroup.reason) console.log(`router memory test skipped: ${cgroup.reason}`);

describe('router host in a 128 MiB memory cgroup', () => {
  it.skipIf(cgroup.dir === undefined)('runs 16 concurrent example runs with no OOM', async () => {
    const cg = cgroup.dir!;
    const state = tempDir('router-memory-');
    try {
      // The shell puts itself into the cgroup, then execs node: everything the router starts
      // (the re-executed child with the memory flags included) is inside from its first byte.
      const { code, stdout, stderr } = await runInCgroup(cg, [process.execPath, cliJs, 'start', '--dir', state, '--profile', 'edge', '--config', path.join(fixtures, 'examples-host.mjs'), '--runs', path.join(fixtures, 'examples-runs.json'), '--cadence-ms', '2', '--until-idle']);
      const read = (name: string) => fs.readFileSync(path.join(cg, name), 'utf8').trim();
      const oom = Object.fromEntries(read('memory.oom_control').split('\n').map((l) => l.split(' ')).map(([k, v]) => [k, Number(v)]));
      const peak = Number(read('memory.max_usage_in_bytes'));
      const failcnt = Number(read('memory.failcnt'));
      const summary = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.kind === 'RouterSummary');
      console.log(
        `router memory (edge, 16 runs, limit 128 MiB): cgroup peak ${(peak / 2 ** 20).toFixed(1)} MiB, process peak RSS ${summary ? (summary.peakRssBytes / 2 ** 20).toFixed(1) : '?'} MiB, ` +
          `commit p95 ${summary?.stats.commitLatency.p95Ms.toFixed(2)} ms (p50 ${summary?.stats.commitLatency.p50Ms.toFixed(2)}, ${summary?.stats.commitLatency.count} commits), failcnt ${failcnt}, oom_kill ${oom.oom_kill ?? 'n/a'}, cycles ${summary?.stats.cycles}`,
      );
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(oom.under_oom).toBe(0);
      if ('oom_kill' in oom) expect(oom.oom_kill).toBe(0);
      expect(summary.runs).toHaveLength(16);
      expect(summary.runs.every((r: any) => r.status === 'completed')).toBe(true);
      expect(peak).toBeLessThanOrEqual(limitBytes);
    } finally {
      fs.rmSync(state, { recursive: true, force: true });
      try {
        fs.rmdirSync(cg);
      } catch (err) {
        console.log(`could not remove ${cg}: ${(err as Error).message}`);
      }
    }
  });
});

// Scripts inside the router's memory budget, in a 128 MiB cgroup v1 memory group: a
// `core.script@1` with the default limits that fills its whole 32 MiB (alone, and as four items
// of a foreach) fails with `script.memory` and the router lives on; a plan whose script asks for
// more than the profile's `scriptMemoryBytesMax` is refused at launch (`router.script-budget`),
// alone, before it can grow the process past the cgroup. Skipped, with the reason printed, only
// where a child memory cgroup cannot be created.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cgroupMemory, childMemoryCgroup, runInCgroup, tempDir } from './helpers.js';

const { FileJournalStore } = await import('../../dist/hosts/router/index.js');

const root = fileURLToPath(new URL('../../', import.meta.url));
const cliJs = path.join(root, 'dist/hosts/router/cli.js');
const limitBytes = 128 * 1024 * 1024;
const cgroup = childMemoryCgroup('router-script-test', limitBytes);
if (cgroup.reason) console.log(`router script memory test skipped: ${cgroup.reason}`);

const fill = "const a = []; for (let i = 0; ; i++) a.push('x'.repeat(64) + i); return a.length;";
const template = (id: string, node: Record<string, unknown>) => ({
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id },
  spec: { nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'fill', ...node }, { id: 'end', uses: 'core.end@1' }], edges: [{ from: 'start', to: 'fill' }, { from: 'fill', to: 'end' }] },
});

describe('router scripts in a 128 MiB memory cgroup', () => {
  it.skipIf(cgroup.dir === undefined)('a script filling its budget fails alone; one asking past the profile is refused', async () => {
    const cg = cgroup.dir!;
    const work = tempDir('router-script-memory-');
    try {
      const write = (name: string, value: unknown) => fs.writeFileSync(path.join(work, name), JSON.stringify(value));
      write('fill.json', template('fill', { uses: 'core.script@1', config: { limits: { fuel: 100_000 }, source: fill } }));
      write('greedy.json', template('greedy', { uses: 'core.script@1', config: { limits: { fuel: 100_000, memoryBytes: 64 * 1024 * 1024 }, source: fill } }));
      write('fill-each.json', template('fill-each', { uses: 'core.foreach@1', config: { maxConcurrency: 2, failurePolicy: 'continue', body: { uses: 'core.script@1', config: { limits: { fuel: 100_000 }, source: fill } } }, inputs: { items: { source: 'input', path: '/items' } } }));
      write('runs.json', [{ template: 'fill.json' }, { template: 'greedy.json' }, { template: 'fill-each.json', input: { items: [1, 2, 3, 4] } }]);
      const state = path.join(work, 'state');
      const { code, stdout } = await runInCgroup(cg, [process.execPath, cliJs, 'start', '--dir', state, '--profile', 'edge', '--runs', path.join(work, 'runs.json'), '--cadence-ms', '2', '--until-idle']);
      const memory = cgroupMemory(cg);
      const lines = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
      const summary = lines.find((l) => l.kind === 'RouterSummary');
      console.log(`router scripts (edge, limit 128 MiB): cgroup peak ${(memory.peakBytes / 2 ** 20).toFixed(1)} MiB, process peak RSS ${summary ? (summary.peakRssBytes / 2 ** 20).toFixed(1) : '?'} MiB, failcnt ${memory.failcnt}, oom_kill ${memory.oomKill ?? 'n/a'}`);
      expect(code).toBe(1); // a refused entry and two runs that did not complete; not 137
      expect(memory.underOom).toBe(0);
      if (memory.oomKill !== undefined) expect(memory.oomKill).toBe(0);
      const refused = lines.find((l) => l.kind === 'EntryRefused');
      expect(refused).toMatchObject({ entry: 1, error: { code: 'router.script-budget' } });
      expect(refused.error.message).toContain('asks 64 MiB');
      expect(summary.runs).toHaveLength(2);
      const store = FileJournalStore.open(state);
      try {
        const byId = new Map(store.listRuns().map((r: any) => [JSON.parse(Buffer.from(store.load(r.runId)!.plan).toString()).root, r]));
        expect(byId.get('fill@inline')).toMatchObject({ status: 'failed', outcome: { error: { detail: { error: { code: 'script.memory' } } } } });
        // The foreach's items each ran out of their own budget; the run went on to its end.
        const each = byId.get('fill-each@inline');
        expect(each.status).toBe('completed');
      } finally {
        store.close();
      }
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
      try {
        fs.rmdirSync(cg);
      } catch (err) {
        console.log(`could not remove ${cg}: ${(err as Error).message}`);
      }
    }
  }, 120_000);

  // A cgroup too small for the 32 MiB a script may fill: the router is OOM-killed while the run's
  // activation evaluates it, twice, and the third start parks the run instead of dying again.
  const small = childMemoryCgroup('router-oom-test', 72 * 1024 * 1024);
  if (small.reason) console.log(`router OOM crash-loop test skipped: ${small.reason}`);
  it.skipIf(small.dir === undefined)('a run whose script gets the router OOM-killed twice is parked by the third start', async () => {
    const cg = small.dir!;
    const work = tempDir('router-oom-');
    try {
      const done = { executable: '/bin/echo', args: ['{"n":1}'], timeoutMs: 10_000, env: {} };
      fs.writeFileSync(path.join(work, 'host.mjs'), `export default { tools: { done: ${JSON.stringify(done)} } };\n`);
      const t = template('oom', { uses: 'core.script@1', config: { limits: { fuel: 100_000 }, source: fill } });
      // The script runs after a tool call, so the run is accepted (and recovered) before it kills anything.
      t.spec.nodes.splice(1, 0, { id: 'a', uses: 'tool.call@1', config: { tool: 'done' } } as any);
      t.spec.edges = [{ from: 'start', to: 'a' }, { from: 'a', to: 'fill' }, { from: 'fill', to: 'end' }];
      (t.spec as any).requires = ['tool:done'];
      fs.writeFileSync(path.join(work, 'oom.json'), JSON.stringify(t));
      fs.writeFileSync(path.join(work, 'runs.json'), JSON.stringify([{ template: 'oom.json' }]));
      const state = path.join(work, 'state');
      const start = async (extra: string[]) => {
        const { code, stdout, stderr } = await runInCgroup(cg, [process.execPath, cliJs, 'start', '--dir', state, '--profile', 'edge', '--config', path.join(work, 'host.mjs'), '--cadence-ms', '2', '--until-idle', ...extra]);
        return { code, stderr, lines: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
      };
      const first = await start(['--runs', path.join(work, 'runs.json')]);
      expect(first.code).toBe(137); // the wrapper reports its child's SIGKILL by the OOM killer
      const runId = first.lines.find((l) => l.kind === 'RunAccepted').runId;
      const second = await start([]);
      expect(second.code).toBe(137);
      expect(second.stderr).toContain(`run ${runId} was being activated when the previous process died (1 of 2`);
      const third = await start([]);
      expect(third.code).toBe(1);
      expect(third.stderr).toContain(`run ${runId} was being activated when 2 processes in a row died; it is parked`);
      const summary = third.lines.find((l) => l.kind === 'RouterSummary');
      expect(summary.runs).toEqual([expect.objectContaining({ runId, status: 'running', parked: expect.objectContaining({ crashes: 2 }) })]);
      expect(cgroupMemory(cg).oomKill ?? 2).toBe(2);
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
      try {
        fs.rmdirSync(cg);
      } catch (err) {
        console.log(`could not remove ${cg}: ${(err as Error).message}`);
      }
    }
  }, 120_000);
});

// A run that kills its host is parked, not replayed forever: the router marks the run it is
// activating (`activation.mark`), the next start counts the death against that run
// (`crashes.json`), and a run that killed two processes in a row is no longer activated — it is
// listed as parked and an operator cancels (or unparks) it. Real router processes, killed with
// SIGKILL exactly while the run's activation evaluates a script (as an OOM kill would).
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir, until, memoryFlags } from './helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const mainJs = path.join(root, 'dist/hosts/node/cli/main.js');

function cli(args: string[]): Promise<{ code: number | null; lines: any[] }> {
  const child = spawn(process.execPath, [mainJs, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] });
  let stdout = '';
  child.stdout!.on('data', (c) => (stdout += c));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, lines: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)) })));
}

const routers: ChildProcess[] = [];
afterEach(() => {
  for (const child of routers.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

describe('router host: a run that kills its host twice is parked', () => {
  it('parks the run after two deaths in a row, lists it as parked, refuses to activate it, and lets an operator cancel it', async () => {
    const work = tempDir('router-crash-');
    const dir = path.join(work, 'state');
    const config = path.join(work, 'host.mjs');
    // A local tool that answers at once, then a script that runs long enough to be killed in.
    const done = { executable: '/bin/echo', args: ['{"n":1}'], timeoutMs: 10_000, env: {} };
    fs.writeFileSync(config, `export default { tools: { done: ${JSON.stringify(done)} } };\n`);
    const template = path.join(work, 'loop.json');
    fs.writeFileSync(
      template,
      JSON.stringify({
        apiVersion: 'workflow.gm-hz.dev/v1alpha1',
        kind: 'WorkflowTemplate',
        metadata: { id: 'crash-loop' },
        spec: {
          requires: ['tool:done'],
          nodes: [
            { id: 'start', uses: 'core.start@1' },
            { id: 'a', uses: 'tool.call@1', config: { tool: 'done' } },
            { id: 'spin', uses: 'core.script@1', config: { limits: { fuel: 100_000 }, source: 'let n = 0; for (;;) n++; return n;' } },
            { id: 'end', uses: 'core.end@1' },
          ],
          edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'spin' }, { from: 'spin', to: 'end' }],
        },
      }),
    );
    const mark = path.join(dir, 'activation.mark');
    const start = () => {
      const child = spawn(process.execPath, [...memoryFlags, mainJs, 'router', 'start', '--dir', dir, '--profile', 'edge', '--config', config, '--cadence-ms', '5'], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
      routers.push(child);
      let stderr = '';
      child.stderr!.on('data', (c) => (stderr += c));
      return { child, stderr: () => stderr, exited: new Promise((r) => child.on('exit', r)) };
    };
    const marked = () => (fs.existsSync(mark) ? fs.readFileSync(mark, 'utf8').trim() : '');

    let router = start();
    await until(() => fs.existsSync(path.join(dir, 'control.sock')));
    const submitted = await cli(['router', 'submit', '--dir', dir, template]);
    const runId = submitted.lines[0].runId as string;
    expect(runId).toMatch(/^run-/);
    // Two processes die while the run's activation evaluates the script.
    for (let death = 1; death <= 2; death++) {
      await until(() => marked() === runId);
      router.child.kill('SIGKILL');
      await router.exited;
      router = start();
      await until(() => fs.existsSync(path.join(dir, 'control.sock')) && router.stderr().includes(runId));
    }
    expect(router.stderr()).toContain(`run ${runId} was being activated when 2 processes in a row died; it is parked`);
    const ledger = JSON.parse(fs.readFileSync(path.join(dir, 'crashes.json'), 'utf8'));
    expect(ledger.runs[runId]).toMatchObject({ crashes: 2 });

    // Parked: listed as such, never activated again (the router runs its cycles, the mark stays blank).
    // The killed router left its socket file behind: wait until the new one answers on it.
    let answer = await cli(['router', 'list', '--dir', dir]);
    for (let i = 0; i < 100 && answer.code !== 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      answer = await cli(['router', 'list', '--dir', dir]);
    }
    const listed = answer.lines[0].runs;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ runId, status: 'running', parked: { crashes: 2 } });
    const cyclesBefore = (await cli(['router', 'stats', '--dir', dir])).lines[0].stats;
    expect(cyclesBefore).toMatchObject({ parked: 1, recovery: { parked: 1 } });
    await new Promise((r) => setTimeout(r, 300));
    const cyclesAfter = (await cli(['router', 'stats', '--dir', dir])).lines[0].stats.cycles;
    expect(cyclesAfter).toBeGreaterThan(cyclesBefore.cycles);
    expect(marked()).toBe('');

    const resolve = await cli(['router', 'resolve', '--dir', dir, runId, 'spin', '--by', 'ops', '--retry']);
    expect(resolve.code).toBe(1);
    expect(resolve.lines[0].error.code).toBe('run.parked');

    const cancelled = await cli(['router', 'cancel', '--dir', dir, runId, '--reason', 'kills the router']);
    expect(cancelled.code).toBe(0);
    expect(cancelled.lines[0]).toMatchObject({ runId, status: 'cancelled' });
    await until(() => !JSON.parse(fs.readFileSync(path.join(dir, 'crashes.json'), 'utf8')).runs[runId]);
    const after = (await cli(['router', 'list', '--dir', dir])).lines[0].runs;
    expect(after[0].parked).toBeUndefined();
    router.child.kill('SIGTERM');
    expect(await router.exited).toBe(0);
  }, 60_000);

  it('a run that killed one process and then activated without dying starts counting again', async () => {
    const work = tempDir('router-crash-');
    const dir = path.join(work, 'state');
    // The script spins for a while (about 1 s), then the run completes: killed once, not twice.
    const template = path.join(work, 'slow.json');
    fs.writeFileSync(
      template,
      JSON.stringify({
        apiVersion: 'workflow.gm-hz.dev/v1alpha1',
        kind: 'WorkflowTemplate',
        metadata: { id: 'crash-once' },
        spec: {
          requires: ['tool:done'],
          nodes: [
            { id: 'start', uses: 'core.start@1' },
            { id: 'a', uses: 'tool.call@1', config: { tool: 'done' } },
            { id: 'spin', uses: 'core.script@1', config: { limits: { fuel: 100_000 }, source: 'let n = 0; for (let i = 0; i < 3e7; i++) n++; return n;' } },
            { id: 'end', uses: 'core.end@1' },
          ],
          edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'spin' }, { from: 'spin', to: 'end' }],
        },
      }),
    );
    const config = path.join(work, 'host.mjs');
    fs.writeFileSync(config, `export default { tools: { done: ${JSON.stringify({ executable: '/bin/echo', args: ['{"n":1}'], timeoutMs: 10_000, env: {} })} } };\n`);
    const mark = path.join(dir, 'activation.mark');
    const first = spawn(process.execPath, [...memoryFlags, mainJs, 'router', 'start', '--dir', dir, '--profile', 'edge', '--config', config, '--cadence-ms', '5'], { cwd: root, stdio: 'ignore' });
    routers.push(first);
    await until(() => fs.existsSync(path.join(dir, 'control.sock')));
    const runId = (await cli(['router', 'submit', '--dir', dir, template])).lines[0].runId as string;
    await until(() => fs.existsSync(mark) && fs.readFileSync(mark, 'utf8').trim() === runId);
    first.kill('SIGKILL');
    await new Promise((r) => first.on('exit', r));
    const second = spawn(process.execPath, [...memoryFlags, mainJs, 'router', 'start', '--dir', dir, '--profile', 'edge', '--config', config, '--cadence-ms', '5', '--until-idle'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] });
    routers.push(second);
    let out = '';
    second.stdout!.on('data', (c) => (out += c));
    expect(await new Promise((r) => second.on('exit', r))).toBe(0);
    const summary = out.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.kind === 'RouterSummary');
    expect(summary.runs).toEqual([expect.objectContaining({ runId, status: 'completed' })]);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'crashes.json'), 'utf8')).runs).toEqual({});
  }, 60_000);

  it('refuses to start on a damaged crash ledger instead of forgetting which run kills it', async () => {
    const dir = path.join(tempDir('router-crash-'), 'state');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'crashes.json'), '{"runs": {"run-x": {"crashes": ');
    const child = spawn(process.execPath, [...memoryFlags, mainJs, 'router', 'start', '--dir', dir, '--profile', 'edge'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] });
    routers.push(child);
    let stdout = '';
    child.stdout!.on('data', (c) => (stdout += c));
    expect(await new Promise((r) => child.on('exit', r))).toBe(65);
    expect(JSON.parse(stdout.split('\n')[0]!).error).toMatchObject({ code: 'store.corrupt' });
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
  }, 60_000);
});

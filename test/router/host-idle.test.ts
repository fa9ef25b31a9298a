// An idle router backs off (its cycles, counted by `router stats` over the control socket, fall
// to about one a second) and comes back to its cadence as soon as work arrives; a router whose
// re-exec wrapper is SIGKILLed stops by itself and releases the state directory.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir, until, operatorCli, alive, memoryFlags } from './helpers.js';

const { FileJournalStore } = await import('../../dist/hosts/router/index.js');

const root = fileURLToPath(new URL('../../', import.meta.url));
const mainJs = path.join(root, 'dist/hosts/node/cli/main.js');
const cliJs = path.join(root, 'dist/hosts/router/cli.js');


const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('router host when idle', () => {
  it('backs off to about one cycle a second when idle and runs submitted work at once', async () => {
    const dir = path.join(tempDir('router-idle-'), 'state');
    // Standalone: a 10 ms cadence, 100 cycles a second when busy.
    const router = spawn(process.execPath, [...memoryFlags, mainJs, 'router', 'start', '--dir', dir, '--profile', 'standalone'], { cwd: root, stdio: 'ignore' });
    children.push(router);
    await until(() => fs.existsSync(path.join(dir, 'control.sock')));
    const stats = async () => (await operatorCli(['router', 'stats', '--dir', dir])).lines[0].stats;
    // The back-off reaches its ceiling after ~7 idle cycles (10 ms doubled to 1 s: ~2.3 s).
    let before = await stats();
    for (let i = 0; i < 100 && before.nextCycleDelayMs < 1000; i++) {
      await sleep(200);
      before = await stats();
    }
    expect(before.nextCycleDelayMs).toBe(1000);
    await sleep(3000);
    const after = await stats();
    const woke = after.cycles - before.cycles;
    console.log(`idle standalone router: ${woke} cycles in 3 s (${after.idleCycles} idle cycles of ${after.cycles})`);
    // At most one cycle a second, plus the ones a request in between may cause (none here).
    expect(woke).toBeLessThanOrEqual(4);
    expect(after.idleCycles - before.idleCycles).toBe(woke);

    // Work comes in: the router is back to its cadence for it, and the run completes.
    const template = path.join(path.dirname(dir), 'two-scripts.json');
    fs.writeFileSync(
      template,
      JSON.stringify({
        apiVersion: 'workflow.gm-hz.dev/v1alpha1',
        kind: 'WorkflowTemplate',
        metadata: { id: 'two-scripts' },
        spec: {
          nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'a', uses: 'core.script@1', config: { source: 'return 1' } }, { id: 'b', uses: 'core.script@1', config: { source: 'return 2' } }, { id: 'end', uses: 'core.end@1' }],
          edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'b' }, { from: 'b', to: 'end' }],
        },
      }),
    );
    const submitted = await operatorCli(['router', 'submit', '--dir', dir, template, '--count', '3']);
    expect(submitted.code).toBe(0);
    for (const line of submitted.lines.filter((l) => l.kind === 'RunAccepted')) {
        let status = '';
      for (let i = 0; i < 200 && status !== 'completed'; i++) {
        status = (await operatorCli(['router', 'get', '--dir', dir, line.runId])).lines[0].run.status;
        if (status !== 'completed') await sleep(50);
      }
      expect(status).toBe('completed');
    }
    router.kill('SIGTERM');
    await new Promise((r) => router.on('exit', r));
  }, 60_000);

  it('a router whose re-exec wrapper is SIGKILLed stops and releases the state directory', async () => {
    const dir = path.join(tempDir('router-wrapper-'), 'state');
    // Started without the memory flags: the process re-executes itself and waits for its child.
    const wrapper = spawn(process.execPath, [cliJs, 'start', '--dir', dir, '--profile', 'edge'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(wrapper);
    let stdout = '';
    let stderr = '';
    wrapper.stdout!.on('data', (c) => (stdout += c));
    wrapper.stderr!.on('data', (c) => (stderr += c));
    await until(() => stdout.includes('\n'));
    const started = JSON.parse(stdout.split('\n')[0]!);
    const routerPid = started.pid as number;
    expect(routerPid).not.toBe(wrapper.pid);
    expect(alive(routerPid)).toBe(true);
    wrapper.kill('SIGKILL');
    await new Promise((r) => wrapper.on('exit', r));
    // The router notices its wrapper is gone, stops in order and exits.
    await until(() => !alive(routerPid), 30_000);
    expect(stderr).toContain('parent exited: stopping');
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'control.sock'))).toBe(false);
    FileJournalStore.open(dir).close();
  }, 60_000);
});

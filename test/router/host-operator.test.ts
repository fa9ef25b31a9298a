// Admitting work into a running router: the operator verbs of the built CLI talk to a real router
// process through its control socket (`<dir>/control.sock`, mode 0600). Each submission gets one
// typed result per entry (run ids as they are accepted, a bad entry refused alone); runs are
// listed, traced, cancelled, approved and exported while the router runs. `--runs` at start prints
// every run id as it is accepted. The Node CLI refuses a router directory and the router a Node one.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir, until, memoryFlags } from './helpers.js';

const { parseExport } = await import('../../dist/hosts/core/export-format.js');

const root = fileURLToPath(new URL('../../', import.meta.url));
const mainJs = path.join(root, 'dist/hosts/node/cli/main.js');
const cases = path.join(root, 'test/cases');

interface Done {
  code: number | null;
  lines: any[];
  stderr: string;
}

/** Runs the built CLI (`agent-workflow …`) to its end. */
function cli(args: string[]): Promise<Done> {
  const child = spawn(process.execPath, [mainJs, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr, lines: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)) })));
}

/** A router process; `lines` fills as it prints. */
function startRouter(args: string[]): { child: ChildProcess; lines: any[]; stderr: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [...memoryFlags, mainJs, 'router', 'start', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: any[] = [];
  let buffered = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => {
    buffered += chunk;
    let i;
    while ((i = buffered.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffered.slice(0, i)));
      buffered = buffered.slice(i + 1);
    }
  });
  child.stderr!.on('data', (c) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, stderr: () => stderr, exited };
}

const routers: ChildProcess[] = [];
afterEach(() => {
  for (const child of routers.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function slowToolHost(work: string): string {
  const script = path.join(work, 'slow.sh');
  fs.writeFileSync(script, 'sleep 30\nprintf \'{"n":1}\'\n');
  const config = path.join(work, 'host.mjs');
  const slow = { executable: '/bin/sh', args: [script], timeoutMs: 60_000, idempotent: false, env: { PATH: '/usr/bin:/bin' } };
  fs.writeFileSync(config, `export default { tools: { slow: ${JSON.stringify(slow)}, echo: async (input) => ({ echoed: input }) } };\n`);
  return config;
}

const oneTool = (tool: string) => ({
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: `one-${tool}` },
  spec: {
    requires: [`tool:${tool}`],
    inputSchema: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
    nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'a', uses: 'tool.call@1', config: { tool }, inputs: { text: { source: 'input', path: '/text' } } }, { id: 'end', uses: 'core.end@1' }],
    edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'end' }],
    outputs: { a: { source: 'output', nodeId: 'a' } },
  },
});

describe('router operator CLI over the control socket', () => {
  it('submits, lists, traces, cancels, approves and exports runs while the router runs', async () => {
    const work = tempDir('router-operator-');
    const dir = path.join(work, 'state');
    const router = startRouter(['--dir', dir, '--profile', 'edge', '--config', slowToolHost(work), '--cadence-ms', '5']);
    routers.push(router.child);
    await until(() => router.lines.some((l) => l.kind === 'RouterStarted'));
    const socket = path.join(dir, 'control.sock');
    expect(router.lines[0].controlSocket).toBe(socket);
    const mode = fs.statSync(socket);
    expect(mode.isSocket()).toBe(true);
    expect(mode.mode & 0o777).toBe(0o600);

    // A manifest with a good entry, a refused one (input against the schema), a missing file,
    // and a good one after them: each entry answers alone, the good ones with their run ids.
    fs.writeFileSync(path.join(work, 'echo.json'), JSON.stringify(oneTool('echo')));
    fs.writeFileSync(path.join(work, 'slow.json'), JSON.stringify(oneTool('slow')));
    fs.copyFileSync(path.join(cases, 'approval-pending/template.json'), path.join(work, 'approval.json'));
    const manifest = path.join(work, 'runs.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify([
        { template: 'echo.json', input: { text: 'one' }, count: 2 },
        { template: 'echo.json', input: { text: 42 } },
        { template: 'missing.json' },
        { template: 'slow.json', input: { text: 'long' } },
        { template: 'approval.json' },
      ]),
    );
    const submitted = await cli(['router', 'submit', '--dir', dir, '--runs', manifest]);
    expect(submitted.code).toBe(1); // some entry was refused
    const kinds = submitted.lines.map((l) => [l.kind, l.entry]);
    expect(kinds).toEqual([
      ['RunAccepted', 0],
      ['RunAccepted', 0],
      ['Error', 1],
      ['Error', 2],
      ['RunAccepted', 3],
      ['RunAccepted', 4],
      ['SubmitSummary', undefined],
    ]);
    expect(submitted.lines[2].error.code).toBe('run.input-invalid');
    expect(submitted.lines[3].error.code).toBe('cli.not-found');
    expect(submitted.lines.at(-1)).toMatchObject({ entries: 5, accepted: 4, refused: 2 });
    const [echo1, echo2, , , slow, approval] = submitted.lines.map((l) => l.runId);
    for (const id of [echo1, echo2, slow, approval]) expect(id).toMatch(/^run-/);

    // One template with --count: one line per run.
    const counted = await cli(['router', 'submit', '--dir', dir, path.join(work, 'echo.json'), '--input', '{"text":"x"}', '--count', '3']);
    expect(counted.code).toBe(0);
    expect(counted.lines.filter((l) => l.kind === 'RunAccepted')).toHaveLength(3);

    const listed = async () => (await cli(['router', 'list', '--dir', dir])).lines[0].runs as any[];
    let runs: any[] = [];
    for (let i = 0; i < 200; i++) {
      runs = await listed();
      const status = (id: string) => runs.find((r) => r.runId === id)?.status;
      if (status(echo1) === 'completed' && status(echo2) === 'completed' && status(approval) === 'paused') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(runs).toHaveLength(7);
    expect(runs.find((r) => r.runId === approval)).toMatchObject({ status: 'paused', approvals: [{ nodeId: 'gate' }] });
    expect(runs.find((r) => r.runId === slow).status).toBe('running');

    const got = await cli(['router', 'get', '--dir', dir, echo1]);
    expect(got.lines[0]).toMatchObject({ kind: 'Run', run: { status: 'completed', output: { a: { echoed: { text: 'one' } } } } });

    const trace = await cli(['router', 'trace', '--dir', dir, echo1]);
    expect(trace.code).toBe(0);
    expect(trace.lines[0].type).toBe('run.accepted');
    expect(trace.lines.map((e) => e.type)).toContain('run.completed');
    expect(trace.lines.map((e) => e.seq)).toEqual(trace.lines.map((_, i) => i + 1));

    const cancelled = await cli(['router', 'cancel', '--dir', dir, slow, '--reason', 'not needed']);
    expect(cancelled.code).toBe(0);
    expect(cancelled.lines[0]).toMatchObject({ kind: 'RunResult', runId: slow, status: 'cancelled' });

    const wrongNode = await cli(['router', 'approve', '--dir', dir, approval, 'nope', '--by', 'ops']);
    expect(wrongNode.code).toBe(1);
    expect(wrongNode.lines[0].error.code).toBe('approval.not-pending');
    const approved = await cli(['router', 'approve', '--dir', dir, approval, 'gate', '--by', 'ops', '--comment', 'fine']);
    expect(approved.code).toBe(0);
    expect(approved.lines[0]).toMatchObject({ kind: 'RunResult', runId: approval, status: 'completed' });

    const out = path.join(work, 'export.json');
    const exported = await cli(['router', 'export', '--dir', dir, approval, '--out', out]);
    expect(exported.code).toBe(0);
    const file = parseExport(JSON.parse(fs.readFileSync(out, 'utf8')));
    expect(file.run.runId).toBe(approval);
    expect(file.events.map((e: any) => e.type)).toContain('run.completed');

    const missing = await cli(['router', 'get', '--dir', dir, 'run-nope']);
    expect(missing.code).toBe(6);
    expect(missing.lines[0].error.code).toBe('run.not-found');

    router.child.kill('SIGTERM');
    expect(await router.exited).toBe(0);
    expect(fs.existsSync(socket)).toBe(false);
    const gone = await cli(['router', 'list', '--dir', dir]);
    expect(gone.code).toBe(69);
    expect(gone.lines[0].error.code).toBe('router.not-running');
  }, 60_000);

  it('--runs prints each run id as it is accepted and refuses a bad entry alone', async () => {
    const work = tempDir('router-operator-');
    const dir = path.join(work, 'state');
    fs.writeFileSync(path.join(work, 'echo.json'), JSON.stringify(oneTool('echo')));
    fs.writeFileSync(path.join(work, 'broken.json'), '{ not json');
    const manifest = path.join(work, 'runs.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify([
        { template: 'echo.json', input: { text: 'a' }, count: 2 },
        { template: 'broken.json' },
        { template: 'echo.json', input: { text: 7 } },
        { template: 'echo.json', input: { text: 'b' } },
      ]),
    );
    const router = startRouter(['--dir', dir, '--profile', 'standalone', '--config', slowToolHost(work), '--cadence-ms', '2', '--runs', manifest, '--until-idle']);
    routers.push(router.child);
    const code = await router.exited;
    expect(code).toBe(1); // two entries were refused
    const kinds = router.lines.map((l) => [l.kind, l.entry]);
    expect(kinds).toEqual([
      ['RouterStarted', undefined],
      ['RunAccepted', 0],
      ['RunAccepted', 0],
      ['EntryRefused', 1],
      ['EntryRefused', 2],
      ['RunAccepted', 3],
      ['RunsLaunched', undefined],
      ['RouterSummary', undefined],
    ]);
    expect(router.lines[3].error.code).toBe('cli.bad-json');
    expect(router.lines[4].error.code).toBe('run.input-invalid');
    const accepted = router.lines.filter((l) => l.kind === 'RunAccepted').map((l) => l.runId);
    const summary = router.lines.at(-1);
    expect(summary.runs.map((r: any) => r.runId).sort()).toEqual([...accepted].sort());
    expect(summary.runs.every((r: any) => r.status === 'completed')).toBe(true);
  }, 60_000);

  it('the Node CLI refuses a router directory and the router refuses a Node one', async () => {
    const work = tempDir('router-operator-');
    const routerDir = path.join(work, 'router');
    const router = startRouter(['--dir', routerDir, '--profile', 'edge', '--cadence-ms', '5']);
    routers.push(router.child);
    await until(() => router.lines.some((l) => l.kind === 'RouterStarted'));
    router.child.kill('SIGTERM');
    expect(await router.exited).toBe(0);

    const runs = await cli(['runs', '--dir', routerDir]);
    expect(runs.code).toBe(9);
    expect(runs.lines[0].error.code).toBe('store.not-a-store');
    expect(runs.lines[0].error.message).toContain('router state directory');
    expect(fs.existsSync(path.join(routerDir, 'workflow.db'))).toBe(false);
    const withStore = await cli(['runs', '--store', path.join(routerDir, 'workflow.db')]);
    expect(withStore.code).toBe(9);
    expect(fs.existsSync(path.join(routerDir, 'workflow.db'))).toBe(false);

    const nodeDir = path.join(work, 'node');
    expect((await cli(['runs', '--dir', nodeDir])).code).toBe(0);
    expect(fs.existsSync(path.join(nodeDir, 'workflow.db'))).toBe(true);
    const refused = startRouter(['--dir', nodeDir, '--profile', 'edge']);
    routers.push(refused.child);
    expect(await refused.exited).toBe(66);
    expect(refused.lines[0].error.code).toBe('store.not-a-store');
    expect(fs.readdirSync(nodeDir).filter((f) => !f.startsWith('workflow.db'))).toEqual([]);
  }, 60_000);
});

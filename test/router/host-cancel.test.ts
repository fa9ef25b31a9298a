// Cancellation on the router host (edge profile) with real local processes: a cancelled request
// never starts an attempt — not while other runs hold the in-flight slots, not the next items of
// a foreach, and not the attempts recovery runs again right after a restart.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fileLines, tempDir, until, memoryFlags } from './helpers.js';

const { RouterHost } = await import('../../dist/hosts/router/index.js');

const root = fileURLToPath(new URL('../../', import.meta.url));
const cliJs = path.join(root, 'dist/hosts/router/cli.js');
const fixtures = path.join(root, 'test/router/fixtures');

/** A non-idempotent local tool that appends its invocation id to `side` when it starts, then sleeps. */
function slowTool(work: string, side: string, sleepSeconds: number) {
  const script = path.join(work, 'slow.sh');
  fs.writeFileSync(script, `printf '%s\\n' "$AGENT_WORKFLOW_INVOCATION_ID" >> "$SIDE_FILE"\nsleep ${sleepSeconds}\nprintf '{"n":1}'\n`);
  return { executable: '/bin/sh', args: [script], timeoutMs: 30_000, env: { SIDE_FILE: side, PATH: '/usr/bin:/bin' } };
}

const lines = fileLines;

const oneTool = (tool: string) => ({
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: 'cancel-one' },
  spec: {
    requires: [`tool:${tool}`],
    nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'a', uses: 'tool.call@1', config: { tool } }, { id: 'end', uses: 'core.end@1' }],
    edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'end' }],
  },
});

describe('router host: cancelled work never starts', () => {
  it('cancelling 10 runs while 2 run starts no further process', async () => {
    const work = tempDir('router-cancel-');
    const side = path.join(work, 'started.txt');
    const host = await RouterHost.open({ dir: path.join(work, 'state'), profile: 'edge', cadenceMs: 2, tools: { slow: slowTool(work, side, 2) }, stopGraceMs: 500, log: () => undefined });
    try {
      const handles = [];
      for (let i = 0; i < 10; i++) handles.push(await host.launch(oneTool('slow'), {}));
      // Both in-flight slots are taken: nothing else can start until one of them ends.
      await until(() => lines(side).length >= 2);
      const before = lines(side);
      await Promise.all(handles.map((h) => host.cancel(h.runId)));
      for (const h of handles) expect((await h.result).status).toBe('cancelled');
      await new Promise((r) => setTimeout(r, 300));
      expect(lines(side)).toEqual(before);
    } finally {
      await host.stop();
    }
  }, 60_000);

  it('a foreach cancelled mid-way starts no item after run.cancelled', async () => {
    const work = tempDir('router-cancel-');
    const side = path.join(work, 'started.txt');
    const template = JSON.parse(fs.readFileSync(path.join(root, 'test/cases/foreach-tools-continue/template.json'), 'utf8'));
    // More items requested at once than the edge profile runs at once: the rest wait in the gateway.
    template.spec.nodes[1].config.maxConcurrency = 10;
    const host = await RouterHost.open({ dir: path.join(work, 'state'), profile: 'edge', cadenceMs: 2, tools: { lookup: slowTool(work, side, 0.2) }, stopGraceMs: 500, log: () => undefined });
    try {
      const handle = await host.launch(template, { ids: Array.from({ length: 40 }, (_, i) => `item-${i}`) });
      await until(() => lines(side).length >= 5);
      await host.cancel(handle.runId);
      const atCancel = lines(side);
      expect((await handle.result).status).toBe('cancelled');
      await new Promise((r) => setTimeout(r, 500));
      // No item started once the cancellation was recorded (the two running ones were stopped).
      expect(lines(side)).toEqual(atCancel);
      const events = host.events(handle.runId);
      const cancelledAt = events.findIndex((e: { type: string }) => e.type === 'run.cancelled');
      expect(cancelledAt).toBeGreaterThan(0);
      expect(events.slice(cancelledAt).filter((e: { type: string }) => e.type === 'capability.requested')).toEqual([]);
    } finally {
      await host.stop();
    }
  }, 60_000);

  it('right after a restart, a cancel stops the attempts recovery would run again', async () => {
    const work = tempDir('router-cancel-');
    const side = path.join(work, 'started.txt');
    const state = path.join(work, 'state');
    const tool = slowTool(work, side, 3);
    const config = path.join(work, 'host.mjs');
    fs.writeFileSync(config, `export default { tools: { step: ${JSON.stringify(tool)} } };\n`);
    const manifest = path.join(work, 'runs.json');
    fs.writeFileSync(manifest, JSON.stringify([{ template: path.join(fixtures, 'kill-workflow.json'), input: { n: 1 }, count: 6 }]));
    // Six runs, two in-flight slots: two processes start, four requests wait without a claim.
    const child = spawn(process.execPath, [...memoryFlags, cliJs, 'start', '--dir', state, '--profile', 'edge', '--config', config, '--runs', manifest, '--cadence-ms', '2'], { stdio: 'ignore' });
    await until(() => lines(side).length >= 2);
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    const beforeRestart = lines(side);
    const host = await RouterHost.open({ dir: state, profile: 'edge', cadenceMs: 2, tools: { step: tool }, stopGraceMs: 500, log: () => undefined });
    try {
      expect(host.recovery.rerun).toBeGreaterThan(0);
      const runs = host.listRuns();
      await Promise.all(runs.map((r: { runId: string }) => host.cancel(r.runId)));
      await until(() => host.listRuns().every((r: { status: string }) => r.status === 'cancelled'));
      await new Promise((r) => setTimeout(r, 500));
      expect(lines(side)).toEqual(beforeRestart);
    } finally {
      await host.stop();
    }
  }, 60_000);
});

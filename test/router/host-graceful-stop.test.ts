// A graceful stop (SIGTERM to a real router process) does not fail runs: a local tool that
// finishes within the grace has its result recorded; one still running at the deadline is
// stopped and left to recovery (the run stays running; after the restart the non-idempotent
// step needs attention); nothing non-idempotent runs twice, even with a retry policy.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fileLines, tempDir, until, memoryFlags } from './helpers.js';

const { RouterHost } = await import('../../dist/hosts/router/index.js');

const root = fileURLToPath(new URL('../../', import.meta.url));
const cliJs = path.join(root, 'dist/hosts/router/cli.js');

const lines = fileLines;

/** One non-idempotent tool step with a retry policy. */
const template = {
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: 'graceful-stop' },
  spec: {
    requires: ['tool:work'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'a', uses: 'tool.call@1', config: { tool: 'work' }, retry: { maxAttempts: 3, backoffMs: 0 } },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'end' }],
    outputs: { n: { source: 'output', nodeId: 'a', path: '/n' } },
  },
};

function setup(sleepSeconds: number, stopGraceMs: number, idempotent = false) {
  const work = tempDir('router-stop-');
  const side = path.join(work, 'started.txt');
  const script = path.join(work, 'work.sh');
  // Sleeps only on its first execution, so a second one (allowed for an idempotent tool) is quick.
  fs.writeFileSync(script, `[ -s "$SIDE_FILE" ] && quick=1\nprintf '%s\\n' "$AGENT_WORKFLOW_INVOCATION_ID" >> "$SIDE_FILE"\n[ -n "$quick" ] || sleep ${sleepSeconds}\nprintf '{"n":7}'\n`);
  const tool = { executable: '/bin/sh', args: [script], timeoutMs: 60_000, idempotent, env: { SIDE_FILE: side, PATH: '/usr/bin:/bin' } };
  const config = path.join(work, 'host.mjs');
  fs.writeFileSync(config, `export default { stopGraceMs: ${stopGraceMs}, tools: { work: ${JSON.stringify(tool)} } };\n`);
  fs.writeFileSync(path.join(work, 'template.json'), JSON.stringify(template));
  const manifest = path.join(work, 'runs.json');
  fs.writeFileSync(manifest, JSON.stringify([{ template: 'template.json', input: {}, count: 1 }]));
  return { state: path.join(work, 'state'), side, tool, config, manifest };
}

/** Starts a router process, sends SIGTERM once the tool has started, and waits for its exit. */
async function stopWhileToolRuns(s: ReturnType<typeof setup>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [...memoryFlags, cliJs, 'start', '--dir', s.state, '--profile', 'edge', '--config', s.config, '--runs', s.manifest, '--cadence-ms', '2'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr += c));
  await until(() => lines(s.side).length >= 1);
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  return { code, stderr };
}

/** Stops a router process while its tool runs, then reopens the directory here and lets `check` look at the one run. */
async function stopAndReopen(s: ReturnType<typeof setup>, check: (host: any, runId: string, recovery: Record<string, number>) => void): Promise<void> {
  const stopped = await stopWhileToolRuns(s);
  expect(stopped.code, stopped.stderr).toBe(0);
  const host = await RouterHost.open({ dir: s.state, profile: 'edge', cadenceMs: 2, tools: { work: s.tool }, log: () => undefined });
  try {
    const [run] = host.listRuns();
    const recovery = { ...host.recovery };
    await host.whenIdle();
    check(host, run.runId, recovery);
  } finally {
    await host.stop();
  }
}

describe('router host: graceful stop', () => {
  it('records the result of a tool that finishes within the grace; the run completes, nothing runs twice', async () => {
    const s = setup(1, 5_000);
    await stopAndReopen(s, (host, runId, recovery) => {
      expect(lines(s.side)).toHaveLength(1);
      expect(host.getRun(runId)).toMatchObject({ status: 'completed', output: { n: 7 } });
      // Recorded by the stopping host itself: nothing was left to recover.
      expect(recovery.runs).toBe(0);
    });
  }, 60_000);

  it('leaves a tool still running at the deadline to recovery: the run stays running, then needs attention, never re-run', async () => {
    const s = setup(30, 300);
    await stopAndReopen(s, (host, runId, recovery) => {
      expect(lines(s.side)).toHaveLength(1);
      const view = host.getRun(runId);
      expect({ status: view.status, pausedReason: view.pausedReason }).toEqual({ status: 'paused', pausedReason: 'needs_attention' });
      // The stop did not decide the step: the run was still running when the host went down.
      expect(recovery).toMatchObject({ runs: 1, unknown: 1, rerun: 0 });
      expect(host.events(runId).filter((e: { type: string; payload?: { error?: { code?: string } } }) => e.payload?.error?.code === 'tool.stopped')).toEqual([]);
    });
  }, 60_000);

  it('runs an idempotent tool stopped at the deadline again after the restart, under the same invocation id', async () => {
    const s = setup(30, 300, true);
    await stopAndReopen(s, (host, runId) => {
      expect(host.getRun(runId)).toMatchObject({ status: 'completed', output: { n: 7 } });
      const [first, second, ...more] = lines(s.side);
      expect(second).toBe(first);
      expect(more).toEqual([]);
    });
  }, 60_000);
});

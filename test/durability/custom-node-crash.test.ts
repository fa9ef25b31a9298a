// A custom node's process is SIGKILLed in the middle of its call (the implementation ran, its
// outcome was never journaled). Reopened with the SDK: an `unknown` effect ends needs_attention
// and is not called again; a `read-only` one is reissued and completes. The implementation's own
// log (a file outside the store) counts the executions.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/runtime.js';

const childScript = new URL('./custom-node-crash-child.mjs', import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), 'custom-node-crash-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const template = {
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: 'crash-comp' },
  spec: {
    requires: ['node:acme.compensate'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'refund', uses: 'acme.compensate@1', inputs: { amount: { source: 'input', path: '/amount' } } },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [
      { from: 'start', to: 'refund' },
      { from: 'refund', to: 'end' },
    ],
    outputs: { refund: { source: 'output', nodeId: 'refund' } },
  },
};

type Effect = 'read-only' | 'unknown';

function definition(dir: string, effect: Effect) {
  return {
    configSchema: {},
    effect,
    implementationDigest: 'sha256:compensate-1',
    execute(input: { amount: number }) {
      writeFileSync(join(dir, 'calls.jsonl'), `${JSON.stringify({ input, pid: process.pid })}\n`, { flag: 'a' });
      return { refunded: input.amount };
    },
  };
}

const calls = (dir: string) => (existsSync(join(dir, 'calls.jsonl')) ? readFileSync(join(dir, 'calls.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

function runChild(dir: string, plan: string, effect: Effect): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [childScript, JSON.stringify({ dir, plan, effect })], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
}

/** Kills a child mid-call, then reopens its store with the SDK and resumes the run. */
async function crashAndReopen(effect: Effect) {
  const dir = mkdtempSync(join(root, `${effect}-`));
  const compiler = await WorkflowRuntime.open({ dir: mkdtempSync(join(root, 'compile-')), log: () => undefined, nodes: { 'acme.compensate@1': definition(dir, effect) } });
  const planFile = join(dir, 'plan.json');
  try {
    writeFileSync(planFile, JSON.stringify(await compiler.compile(template)));
  } finally {
    await compiler.close();
  }
  const child = await runChild(dir, planFile, effect);
  expect(child.stderr).toBe('');
  expect(child.signal).toBe('SIGKILL');
  expect(calls(dir)).toHaveLength(1);

  const rt = await WorkflowRuntime.open({ dir, log: () => undefined, nodes: { 'acme.compensate@1': definition(dir, effect) } });
  try {
    expect(await rt.checkRun('crash-1')).toEqual({ runId: 'crash-1', ok: true, problems: [] });
    const outcome = await (await rt.resume('crash-1', { by: 'crash-test' })).settled();
    const events = (await rt.readEvents('crash-1', { limit: 1000 })).events as any[];
    return { dir, outcome, events, run: await rt.getRun('crash-1') };
  } finally {
    await rt.close();
  }
}

describe('SIGKILL in the middle of a custom node call', () => {
  it('an unknown effect ends needs_attention and is not executed again', async () => {
    const { dir, outcome, events, run } = await crashAndReopen('unknown');
    expect(outcome.status).toBe('paused');
    expect(run).toMatchObject({ status: 'paused' });
    expect(events.filter((e) => e.type === 'capability.abandoned')).toHaveLength(1);
    const attention = events.filter((e) => e.type === 'node.needs-attention');
    expect(attention.map((e) => e.payload.evidence)).toEqual([expect.objectContaining({ kind: 'node', name: 'acme.compensate@1', effect: 'unknown' })]);
    expect(calls(dir)).toHaveLength(1);
  }, 60_000);

  it('a read-only one is reissued and completes (the twin)', async () => {
    const { dir, outcome, events } = await crashAndReopen('read-only');
    expect(outcome).toMatchObject({ status: 'completed', output: { refund: { refunded: 9 } } });
    expect(events.filter((e) => e.type === 'capability.requested').map((e) => e.payload.reissued ?? false)).toEqual([false, true]);
    expect(events.some((e) => e.type === 'node.needs-attention')).toBe(false);
    expect(calls(dir)).toHaveLength(2);
  }, 60_000);
});

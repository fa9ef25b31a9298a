// The router host reads what a run waits for, how it ended and its calls in flight from the
// projection its last commit carried (journal format 2), never from the run's events: getRun
// after late evidence, approve and startup recovery of a run with a long history.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tempDir } from './helpers.js';

const { RouterHost, FileJournalStore } = await import('../../dist/hosts/router/index.js');

const dirs: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function stateDir(): string {
  const dir = tempDir('router-projection-');
  dirs.push(dir);
  return path.join(dir, 'state');
}

const base = { apiVersion: 'workflow.gm-hz.dev/v1alpha1', kind: 'WorkflowTemplate' };

/** 600 script items (about 1,200 events) before an approval only `ops` may decide. */
const longThenApproval = {
  ...base,
  metadata: { id: 'long-then-approval' },
  spec: {
    requires: ['approval'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'each', uses: 'core.foreach@1', config: { maxConcurrency: 4, maxItems: 1000, body: { uses: 'core.script@1', config: { source: 'return input + 1' } } }, inputs: { items: { source: 'input', path: '/items' } } },
      { id: 'gate', uses: 'human.approval@1', config: { prompt: 'go on?', approvers: ['ops'] } },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [
      { from: 'start', to: 'each' },
      { from: 'each', to: 'gate' },
      { from: 'gate', to: 'end' },
    ],
    outputs: { by: { source: 'output', nodeId: 'gate', path: '/by' } },
  },
};

describe('router projections', () => {
  it("keeps a failed run's error in getRun after more late evidence than a tail of 8 events", async () => {
    const host = await RouterHost.open({
      dir: stateDir(),
      cadenceMs: 1,
      log: () => undefined,
      tools: { work: (n: number) => (n === 0 ? Promise.reject(Object.assign(new Error('item zero broke'), { code: 'work.broken' })) : new Promise((r) => setTimeout(() => r({ n }), 20))) },
    });
    try {
      const t = {
        ...base,
        metadata: { id: 'fail-fast-late' },
        spec: {
          requires: ['tool:work'],
          nodes: [
            { id: 'start', uses: 'core.start@1' },
            { id: 'each', uses: 'core.foreach@1', config: { maxConcurrency: 4, body: { uses: 'tool.call@1', config: { tool: 'work', idempotent: true } } }, inputs: { items: { source: 'input', path: '/items' } } },
            { id: 'end', uses: 'core.end@1' },
          ],
          edges: [
            { from: 'start', to: 'each' },
            { from: 'each', to: 'end' },
          ],
        },
      };
      const run = await host.launch(t, { items: [0, 1, 2, 3] });
      const outcome = await run.result;
      expect(outcome).toMatchObject({ status: 'failed', error: { code: 'node.failed' } });
      // Outcomes that reach the run after it failed are evidence: each is one capability.late.
      for (let i = 0; i < 10; i++) await host.kernel.deliver(run.runId, { type: 'capability-completed', invocationId: `late-${i}`, ok: true, output: i });
      const events = host.events(run.runId);
      const failedAt = events.findIndex((e: any) => e.type === 'run.failed');
      expect(events.length - 1 - failedAt).toBeGreaterThanOrEqual(10);
      expect(host.getRun(run.runId)).toMatchObject({ status: 'failed', error: outcome.error });
    } finally {
      await host.stop();
    }
  });

  it('recovers a paused run with a long journal from its projection, reading none of its events, and approves from it', async () => {
    const dir = stateDir();
    let host = await RouterHost.open({ dir, cadenceMs: 1, log: () => undefined });
    const run = await host.launch(longThenApproval, { items: Array.from({ length: 600 }, (_, i) => i) });
    expect(await run.settled()).toMatchObject({ status: 'paused', pausedReason: 'approval' });
    const lastSeq = host.getRun(run.runId).lastSeq;
    expect(lastSeq).toBeGreaterThan(1_200);
    await host.stop();

    const readEvents = vi.spyOn(FileJournalStore.prototype, 'readEvents');
    host = await RouterHost.open({ dir, cadenceMs: 1, log: () => undefined });
    try {
      expect(host.recovery.runs).toBe(1);
      for (let i = 0; i < 3; i++) await host.whenIdle();
      expect(readEvents).not.toHaveBeenCalled();
      expect(() => host.approve(run.runId, 'gate', { by: 'intern' })).toThrow(expect.objectContaining({ code: 'approval.not-allowed' }));
      expect(() => host.approve(run.runId, 'each', { by: 'ops' })).toThrow(expect.objectContaining({ code: 'approval.not-pending' }));
      await host.approve(run.runId, 'gate', { by: 'ops' });
      for (let i = 0; i < 100 && host.getRun(run.runId).status !== 'completed'; i++) await host.whenIdle();
      expect(host.getRun(run.runId)).toMatchObject({ status: 'completed', output: { by: 'ops' } });
    } finally {
      await host.stop();
    }
  });
});

// Router host lifecycle through dist: stop order (freeze, exact stop, settle, close; one shared
// promise) and the pure recovery plan.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

const { RouterHost, planRunRecovery, FileJournalStore, ReceiptLog } = await import('../../dist/hosts/router/index.js');
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));

const template = {
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: 'router-sleep' },
  spec: {
    requires: ['tool:sleepy'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'sleep', uses: 'tool.call@1', config: { tool: 'sleepy' } },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [
      { from: 'start', to: 'sleep' },
      { from: 'sleep', to: 'end' },
    ],
  },
};

describe('router host stop', () => {
  it('freezes admission, stops the process still running after the grace exactly, leaves its run running, closes; concurrent stops share one promise', async () => {
    const dir = tempDir('router-stop-');
    const ready = path.join(dir, 'ready');
    const sleepy = { executable: process.execPath, args: [path.join(fixtures, 'tool.mjs'), 'sleep', ready], timeoutMs: 60_000 };
    const host = await RouterHost.open({ dir: path.join(dir, 'state'), profile: 'edge', cadenceMs: 1, stopGraceMs: 500, tools: { sleepy }, log: () => undefined });
    const a = await host.launch(template, {});
    const b = await host.launch(template, {});
    while (!fs.existsSync(ready)) await new Promise((r) => setTimeout(r, 10));
    const first = host.stop();
    const second = host.stop();
    expect(second).toBe(first);
    await expect(host.launch(template, {})).rejects.toMatchObject({ code: 'host.stopping' });
    await first;
    const store = FileJournalStore.open(path.join(dir, 'state'));
    try {
      const types = (runId: string) => store.readEvents(runId, 0, 1000).events.map((e: string) => JSON.parse(e));
      const all = [...types(a.runId), ...types(b.runId)];
      // Both attempts were running (edge: two in flight) and still were at the end of the grace:
      // each got an exact stop, and neither outcome was recorded: both runs stay running, for the
      // next start to resolve from the receipts. Nothing else started.
      expect(all.filter((e) => e.type === 'capability.completed')).toEqual([]);
      expect(all.filter((e) => e.type === 'capability.requested')).toHaveLength(2);
      expect([store.getRun(a.runId)!.status, store.getRun(b.runId)!.status]).toEqual(['running', 'running']);
      const receipts = ReceiptLog.open(path.join(dir, 'state'));
      try {
        expect(receipts.all().map((r: any) => [r.stop?.intent, r.completion?.stopIntent])).toEqual([
          ['shutdown', 'shutdown'],
          ['shutdown', 'shutdown'],
        ]);
      } finally {
        receipts.close();
      }
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('recovery plan', () => {
  const req = (id: string, kind = 'tool', name = 'local') => ({ invocationId: id, runId: 'r', nodeId: 'n', attempt: 1, kind, name, input: {}, effect: 'unknown' });
  const isLocal = (r: { kind: string; name: string }) => r.kind === 'tool' && r.name === 'local';
  it('settles from receipts, re-runs what never started, leaves the rest to the engine', () => {
    const completion = { invocationId: 'done', exitCode: 0, signal: null, output: 1, stderrTail: '', endedAt: 1 };
    const attempts = new Map<string, any>([
      ['done', { state: 'settled', invocationId: 'done', idempotent: false, completion }],
      ['lost-idem', { state: 'lost', invocationId: 'lost-idem', idempotent: true }],
      ['lost', { state: 'lost', invocationId: 'lost', idempotent: false }],
      ['gone', { state: 'needs_attention', invocationId: 'gone', idempotent: true, reason: 'process-gone', detail: '' }],
    ]);
    const plan = planRunRecovery('r', [req('done'), req('none'), req('lost-idem'), req('lost'), req('gone'), req('js', 'tool', 'inproc'), req('ag', 'agent', 'a')], attempts, isLocal);
    expect(plan.settled.map((s: any) => s.invocationId)).toEqual(['done']);
    expect(plan.rerun.map((r: any) => r.invocationId)).toEqual(['none', 'lost-idem']);
    expect(plan.unknown).toEqual(['lost', 'gone', 'js', 'ag']);
  });
});

describe('router host operator actions', () => {
  it('pauses for an approval, takes the decision with who made it, and finishes', async () => {
    const dir = tempDir('router-approve-');
    const host = await RouterHost.open({ dir: path.join(dir, 'state'), profile: 'edge', cadenceMs: 1, log: () => undefined });
    try {
      const gated = {
        apiVersion: 'workflow.gm-hz.dev/v1alpha1',
        kind: 'WorkflowTemplate',
        metadata: { id: 'router-gate' },
        spec: {
          requires: ['approval'],
          nodes: [
            { id: 'start', uses: 'core.start@1' },
            { id: 'gate', uses: 'human.approval@1', config: { prompt: 'Reboot the router?' } },
            { id: 'end', uses: 'core.end@1' },
          ],
          edges: [
            { from: 'start', to: 'gate' },
            { from: 'gate', to: 'end' },
          ],
          outputs: { by: { source: 'output', nodeId: 'gate', path: '/by' } },
        },
      };
      const run = await host.launch(gated, {});
      expect(await run.settled()).toMatchObject({ status: 'paused', pausedReason: 'approval' });
      expect(() => host.approve(run.runId, 'end', { by: 'ops' })).toThrow(expect.objectContaining({ code: 'approval.not-pending' }));
      await host.approve(run.runId, 'gate', { by: 'ops', comment: 'maintenance window' });
      expect(await run.result).toMatchObject({ status: 'completed', output: { by: 'ops' } });
      const decided = host.events(run.runId).find((e: any) => e.type === 'capability.completed');
      expect(decided.origin.actor).toBe('operator:ops');
      expect(host.replay(run.runId, 'recorded')).toMatchObject({ identical: true });
    } finally {
      await host.stop();
    }
  });
});

// One operator interface (hosts/core/operator-api.ts), implemented by the Node SDK and the router
// with the same signatures: the same script of operator verbs runs against both hosts and sees
// the same answers.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Operator } from '../../hosts/core/operator-api.js';
import { chain, openRuntime } from '../helpers/node-host.js';
import { tempDir } from './helpers.js';

const { RouterHost, RouterOperator } = await import('../../dist/hosts/router/index.js');

const gated = chain('operator-gate', [{ id: 'gate', uses: 'human.approval@1', config: { prompt: 'go?', approvers: ['ops'] } }], { requires: ['approval'] });

/** What an operator sees of a run waiting at `gate`, and after approving it. */
async function script(op: Operator, runId: string) {
  const waiting = await op.getRun(runId);
  const listed = (await op.listRuns()).map((r) => [r.runId, r.status]);
  const refused = await op.approve(runId, 'gate', { by: 'intern' }).catch((err: { code: string }) => err.code);
  const approved = await op.approve(runId, 'gate', { by: 'ops', comment: 'fine' });
  const trace = await op.readEvents(runId, { afterSeq: 0, limit: 3 });
  const exported = await op.exportRun(runId);
  const missing = await op.getRun('no-such-run').catch((err: { code: string }) => err.code);
  return {
    waiting: { status: waiting.status, pausedReason: waiting.pausedReason },
    listed,
    refused,
    approved: { status: approved.status },
    trace: { types: trace.events.map((e) => e.type), lastSeq: trace.lastSeq, more: trace.more },
    exported: { status: exported.run.status, runEvents: exported.events.map((e) => e.type).filter((t) => t.startsWith('run.')) },
    missing,
  };
}

const expected = (runId: string) => ({
  waiting: { status: 'paused', pausedReason: 'approval' },
  listed: [[runId, 'paused']],
  refused: 'approval.not-allowed',
  approved: { status: 'completed' },
  trace: { types: ['run.accepted', 'run.started', 'node.started'], lastSeq: 3, more: true },
  exported: { status: 'completed', runEvents: ['run.accepted', 'run.started', 'run.paused', 'run.resumed', 'run.completed'] },
  missing: 'run.not-found',
});

describe('the operator interface', () => {
  it('answers the same script the same way on the Node SDK', async () => {
    const rt = await openRuntime();
    try {
      const run = await rt.launch(gated, { input: {} });
      expect((await run.settled()).status).toBe('paused');
      expect(await script(rt, run.runId)).toEqual(expected(run.runId));
    } finally {
      await rt.close();
    }
  });

  it('answers the same script the same way on the router', async () => {
    const dir = tempDir('router-operator-');
    const host = await RouterHost.open({ dir: path.join(dir, 'state'), profile: 'standalone', cadenceMs: 1, log: () => undefined });
    try {
      const run = await host.launch(gated, {});
      expect((await run.settled()).status).toBe('paused');
      expect(await script(new RouterOperator(host), run.runId)).toEqual(expected(run.runId));
    } finally {
      await host.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

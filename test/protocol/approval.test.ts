// Protocol tests of human.approval@1: the request, the pause, approve, reject, continue on reject.
import { describe, expect, it } from 'vitest';
import { bind, ev, expectEvents, fact, node, nodeFailure, protocolRun, template } from './harness.js';

const approvalTemplate = (config: Record<string, unknown> = {}) =>
  template('approve', [node.start(), node.approval('ok', { prompt: 'Ship it?', approvers: ['alice'], ...config }, { inputs: { plan: bind.input('/plan') } }), node.end('end', { decision: bind.output('ok') })]);

describe('human.approval@1', () => {
  it('pending: requests an approval and pauses the run for it', () => {
    const t = protocolRun(approvalTemplate());
    const s = t.start({ plan: 'v2' });
    expectEvents(s.events.slice(5), [
      ev.nodeStarted('ok', {}, { inv: 'ok#1' }),
      ev.requested('ok#1', { kind: 'approval', name: 'ok', effect: 'idempotent', input: { plan: 'v2' } }),
      { type: 'node.waiting', node: 'ok', attempt: 1, inv: 'ok#1', payload: { reason: 'approval' } },
      ev.paused('approval'),
      ev.checkpoint(),
    ]);
    expect(s.requests).toEqual([
      { inv: 'ok#1', node: 'ok', attempt: 1, kind: 'approval', name: 'ok', input: { plan: 'v2' }, effect: 'idempotent', config: { prompt: 'Ship it?', approvers: ['alice'] }, authority: { id: 'tester', scopes: ['*'] } },
    ]);
    expect(s.summary).toMatchObject({ status: 'paused', pausedReason: 'approval' });
    expect(s.summary.wakeAt).toBeUndefined();
  });

  it('approved: the decision is the node output and the run completes', () => {
    const t = protocolRun(approvalTemplate());
    t.start({ plan: 'v2' });
    const decision = { approved: true, by: 'alice', comment: 'go' };
    const s = t.activate(fact.approved('ok#1', 'alice', { comment: 'go' }));
    expectEvents(s.events, [
      ev.completedCall('ok#1', decision),
      ev.committed('ok', decision, { inv: 'ok#1' }),
      ev.taken(1, 'ok', 'end'),
      ev.nodeStarted('end'),
      ev.committed('end', { decision }),
      // The run is settled at the end of the activation: it leaves its pause to complete.
      { type: 'run.resumed', payload: { reason: 'completing' } },
      ev.runCompleted({ decision }),
    ]);
  });

  it('rejected: the node fails with approval.rejected', () => {
    const t = protocolRun(approvalTemplate());
    t.start({ plan: 'v2' });
    const s = t.activate(fact.rejected('ok#1', 'alice', { comment: 'not now' }));
    const error = { code: 'approval.rejected', message: 'alice rejected ok: not now', retryable: false };
    expectEvents(s.events, [ev.completedCall('ok#1', { approved: false, by: 'alice', comment: 'not now' }), ev.nodeFailed('ok', error), ev.runFailed(nodeFailure('ok', error))]);
    expect(s.summary.status).toBe('failed');
  });

  it('rejected with onReject continue: the rejection is the output and the run goes on', () => {
    const t = protocolRun(approvalTemplate({ onReject: 'continue' }));
    t.start({ plan: 'v2' });
    const s = t.activate(fact.rejected('ok#1', 'alice'));
    expect(s.summary).toMatchObject({ status: 'completed', result: { decision: { approved: false, by: 'alice' } } });
  });
});

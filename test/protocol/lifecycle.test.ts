// Protocol tests of the run's lifecycle: cancel with calls in flight, resume after a restart
// (unknown effects need attention, safe ones are reissued), operator resolutions, the run's
// deadline, and capture mode metadata.
import { describe, expect, it } from 'vitest';
import { authority, bind, ev, expectEvents, fact, node, nodeFailure, protocolRun, refOf, t0, template, type Ev } from './harness.js';

/** start -> a (tool), b (tool) in parallel -> end. */
const twoCalls = (a: Record<string, unknown> = {}, b: Record<string, unknown> = {}, spec: Record<string, unknown> = {}) =>
  template(
    'two',
    [node.start(), node.tool('a', 'charge', { inputs: { n: bind.input('/n') }, ...a }), node.tool('b', 'lookup', { inputs: { n: bind.input('/n') }, ...b }), node.end('end', { a: bind.output('a'), b: bind.output('b') })],
    ['start -> a', 'start -> b', 'a -> end', 'b -> end'],
    spec,
  );

const needsAttention = (inv: string, evidence: Record<string, unknown>): Ev => ({ type: 'node.needs-attention', node: refOf(inv).node, attempt: refOf(inv).attempt, payload: { invocationId: inv, evidence } });

describe('cancel', () => {
  it('cancels every call in flight, every active node, then the run', () => {
    const t = protocolRun(twoCalls());
    t.start({ n: 1 });
    const s = t.activate(fact.cancel('changed my mind', 'operator:bob'), t0 + 5);
    expectEvents(s.events, [
      { type: 'run.cancel-requested', payload: { reason: 'changed my mind', by: 'operator:bob' } },
      ev.cancelledCall('a#1', 'run cancelled'),
      ev.cancelledCall('b#1', 'run cancelled'),
      { type: 'node.cancelled', node: 'a', attempt: 1, payload: { reason: 'changed my mind' } },
      { type: 'node.cancelled', node: 'b', attempt: 1, payload: { reason: 'changed my mind' } },
      { type: 'run.cancelled', payload: { reason: 'changed my mind', by: 'operator:bob' } },
    ]);
    expect(s.cancels).toEqual([
      { inv: 'a#1', reason: 'run cancelled' },
      { inv: 'b#1', reason: 'run cancelled' },
    ]);
    expect(s.summary.status).toBe('cancelled');
    // A second cancel of an ended run decides nothing.
    expect(t.activate(fact.cancel()).events).toEqual([]);
  });
});

describe('resume after a restart', () => {
  it('an unknown-effect call is abandoned and needs attention; a safe one is reissued', () => {
    const t = protocolRun(twoCalls({}, { readOnly: true }));
    t.start({ n: 1 });
    t.restart();
    const s = t.activate(fact.restarted(), t0 + 100);
    const reason = 'the host restarted before the outcome was recorded; it is unknown whether the call took effect';
    expectEvents(s.events, [
      { type: 'run.resumed', payload: { by: 'host', afterRestart: true } },
      { type: 'capability.abandoned', ...refOf('a#1'), payload: { invocationId: 'a#1', reason } },
      needsAttention('a#1', { kind: 'tool', name: 'charge', effect: 'unknown', requestedSeq: 8 }),
      ev.requested('b#1', { kind: 'tool', name: 'lookup', effect: 'read-only', input: { n: 1 }, reissued: true }),
    ]);
    expect(s.requests).toEqual([{ inv: 'b#1', node: 'b', attempt: 1, kind: 'tool', name: 'lookup', input: { n: 1 }, effect: 'read-only', reissued: true, authority }]);
    expect(s.cancels).toEqual([]);

    // The safe call completes; the run then waits for an operator.
    const s2 = t.activate(fact.completed('b#1', 'B'));
    expectEvents(s2.events, [ev.completedCall('b#1', 'B'), ev.committed('b', 'B', { inv: 'b#1' }), ev.taken(3, 'b', 'end'), ev.paused('needs_attention'), ev.checkpoint()]);
    expect(s2.summary).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });
  });

  it('effects declared by the host at resume make an unknown call safe to reissue', () => {
    const t = protocolRun(twoCalls());
    t.start({ n: 1 });
    t.restart();
    const s = t.activate(fact.restarted({ effects: { 'tool:charge': 'idempotent' } }));
    const reason = 'the host restarted before the outcome was recorded; it is unknown whether the call took effect';
    expectEvents(s.events, [
      { type: 'run.resumed', payload: { by: 'host', afterRestart: true, effects: { 'tool:charge': 'idempotent' } } },
      // The call keeps the effect it was requested with; the host's declaration makes it safe.
      ev.requested('a#1', { kind: 'tool', name: 'charge', effect: 'unknown', input: { n: 1 }, reissued: true }),
      { type: 'capability.abandoned', ...refOf('b#1'), payload: { invocationId: 'b#1', reason } },
      needsAttention('b#1', { kind: 'tool', name: 'lookup', effect: 'unknown', requestedSeq: 10 }),
    ]);
    expect(s.requests.map((r) => [r.inv, r.reissued])).toEqual([['a#1', true]]);
  });

  it('a resume without a restart only records who resumed', () => {
    const t = protocolRun(twoCalls());
    t.start({ n: 1 });
    const s = t.activate(fact.resume({ by: 'operator:bob' }));
    expectEvents(s.events, [{ type: 'run.resumed', payload: { by: 'operator:bob' } }]);
    expect(s.requests).toEqual([]);
  });
});

describe('outcome-resolved', () => {
  /** A run whose call `a#1` needs attention after a restart. */
  function stuck() {
    const t = protocolRun(template('one', [node.start(), node.tool('a', 'charge'), node.end('end', { a: bind.output('a') })]));
    t.start({});
    t.restart();
    t.activate(fact.restarted());
    return t;
  }

  it('succeeded: the operator\u2019s output is committed and the run completes', () => {
    const t = stuck();
    const s = t.activate(fact.resolved('a', 'succeeded', { output: { charged: true }, reason: 'checked the ledger' }));
    expectEvents(s.events, [
      { type: 'node.resolved', node: 'a', attempt: 1, payload: { resolution: 'succeeded', by: 'operator:bob', reason: 'checked the ledger', output: { charged: true } } },
      ev.committed('a', { charged: true }, { inv: 'a#1' }),
      ev.taken(1, 'a', 'end'),
      ev.nodeStarted('end'),
      ev.committed('end', { a: { charged: true } }),
      { type: 'run.resumed', payload: { reason: 'completing' } },
      ev.runCompleted({ a: { charged: true } }),
    ]);
  });

  it('retry: the node starts its next attempt', () => {
    const t = stuck();
    const s = t.activate(fact.resolved('a', 'retry'));
    expectEvents(s.events, [
      { type: 'node.resolved', node: 'a', attempt: 1, payload: { resolution: 'retry', by: 'operator:bob' } },
      ev.nodeStarted('a', {}, { attempt: 2, inv: 'a#2' }),
      ev.requested('a#2', { kind: 'tool', name: 'charge', effect: 'unknown', input: {} }),
      { type: 'run.resumed', payload: { reason: 'work resumed' } },
    ]);
    expect(s.requests.map((r) => r.inv)).toEqual(['a#2']);
  });

  it('fail: the node fails with node.resolved-failed', () => {
    const t = stuck();
    const s = t.activate(fact.resolved('a', 'fail', { reason: 'double charge' }));
    const error = { code: 'node.resolved-failed', message: 'operator:bob marked a failed: double charge', retryable: false };
    expectEvents(s.events, [
      { type: 'node.resolved', node: 'a', attempt: 1, payload: { resolution: 'fail', by: 'operator:bob', reason: 'double charge' } },
      ev.nodeFailed('a', error),
      ev.runFailed(nodeFailure('a', error)),
    ]);
  });

  it('a node that does not need attention cannot be resolved', () => {
    const t = stuck();
    expect(t.refused(fact.resolved('end', 'succeeded'))).toEqual({ code: 'resolve.not-needed', message: 'node end is pending, not needs-attention; nothing to resolve' });
    expect(t.refused(fact.resolved('nope', 'fail')).code).toBe('resolve.unknown-node');
  });

  it('a foreach item with an unknown outcome is resolved by its index', () => {
    const t = protocolRun(template('each', [node.start(), node.foreach('each', bind.input('/items'), { uses: 'tool.call@1', config: { tool: 'charge' } }, { maxConcurrency: 2 }), node.end('end', { r: bind.output('each', '/results') })]));
    t.start({ items: ['x', 'y'] });
    t.restart();
    const s0 = t.activate(fact.restarted());
    const reason = 'the host restarted before the outcome was recorded; it is unknown whether the call took effect';
    expectEvents(s0.events, [
      { type: 'run.resumed', payload: { by: 'host', afterRestart: true } },
      { type: 'capability.abandoned', ...refOf('each[0]#1'), payload: { invocationId: 'each[0]#1', reason } },
      { type: 'node.needs-attention', node: 'each', attempt: 1, payload: { invocationId: 'each[0]#1', item: 0, evidence: { kind: 'tool', name: 'charge', effect: 'unknown', requestedSeq: 8 } } },
      { type: 'capability.abandoned', ...refOf('each[1]#1'), payload: { invocationId: 'each[1]#1', reason } },
      { type: 'node.needs-attention', node: 'each', attempt: 1, payload: { invocationId: 'each[1]#1', item: 1, evidence: { kind: 'tool', name: 'charge', effect: 'unknown', requestedSeq: 10 } } },
      ev.paused('needs_attention'),
      ev.checkpoint(),
    ]);
    const s1 = t.activate(fact.resolved('each', 'succeeded', { item: 0, output: 'X' }));
    expectEvents(s1.events, [
      { type: 'node.resolved', node: 'each', attempt: 1, item: 0, payload: { resolution: 'succeeded', by: 'operator:bob', output: 'X', item: 0 } },
      { type: 'node.item-committed', node: 'each', attempt: 1, item: 0, payload: { index: 0, output: 'X', fromUnknown: true } },
    ]);
    const s2 = t.activate(fact.resolved('each', 'retry', { item: 1 }));
    expectEvents(s2.events, [
      { type: 'node.resolved', node: 'each', attempt: 1, item: 1, payload: { resolution: 'retry', by: 'operator:bob', item: 1 } },
      { type: 'node.item-started', ...refOf('each[1]#2'), payload: { index: 1 } },
      ev.requested('each[1]#2', { kind: 'tool', name: 'charge', effect: 'unknown', input: 'y', item: 1 }),
      { type: 'node.resumed', node: 'each', attempt: 1, payload: { reason: 'every unknown item was resolved' } },
      { type: 'run.resumed', payload: { reason: 'work resumed' } },
    ]);
    expect(t.activate(fact.completed('each[1]#2', 'Y')).summary).toMatchObject({ status: 'completed', result: { r: ['X', 'Y'] } });
  });
});

describe('the run deadline', () => {
  it('fails the run at its deadline and cancels what is in flight; the deadline is the wake-up time', () => {
    const t = protocolRun(twoCalls({}, {}, { policies: { timeoutMs: 60_000 } }));
    const s1 = t.start({ n: 1 });
    expectEvents(s1.events.slice(0, 1), [t.accepted({ n: 1 }, { deadlineAt: t0 + 60_000 })]);
    expect(s1.summary.wakeAt).toBe(t0 + 60_000);
    expect(t.activate(fact.completed('a#1', 'A'), t0 + 59_999).summary.wakeAt).toBe(t0 + 60_000);

    const s2 = t.wake(t0 + 60_000);
    expectEvents(s2.events, [
      ev.cancelledCall('b#1', 'run failed'),
      ev.runFailed({ code: 'run.timeout', message: 'the run passed its time limit at 2026-01-01T00:01:00.000Z' }),
    ]);
    expect(s2.cancels).toEqual([{ inv: 'b#1', reason: 'run failed' }]);
    expect(s2.summary.wakeAt).toBeUndefined();
  });

  it('the launch may set the time limit (timeoutMs of run-requested)', () => {
    const t = protocolRun(twoCalls());
    const s = t.start({ n: 1 }, { timeoutMs: 5 });
    expect(s.summary.wakeAt).toBe(t0 + 5);
    expect(t.wake(t0 + 5).summary).toMatchObject({ status: 'failed', error: { code: 'run.timeout' } });
  });
});

describe('capture mode metadata', () => {
  const digest = expect.stringMatching(/^sha256:[0-9a-f]{64}$/);

  it('journals digests and sizes instead of payloads, and keeps the payloads in memory', () => {
    const t = protocolRun(template('meta', [node.start(), node.tool('a', 'charge', { inputs: { n: bind.input('/n') } }), node.end('end', { a: bind.output('a') })]), { metadata: true });
    const s1 = t.start({ n: 1 });
    expect(s1.events[0]).toEqual({
      type: 'run.accepted',
      payload: { inputDigest: digest, inputBytes: 7, authority, templateKey: 'meta@inline', planHash: t.plan.planHash, nodeIds: ['start', 'a', 'end'], capture: 'metadata' },
    });
    expectEvents([s1.events[3], s1.events[6]], [
      { type: 'node.output-committed', node: 'start', attempt: 1, payload: { outputDigest: digest, outputBytes: 7 } },
      ev.requested('a#1', { kind: 'tool', name: 'charge', effect: 'unknown', inputDigest: digest, inputBytes: 7 }),
    ]);
    // The gateway gets the payload itself.
    expect(s1.requests[0].input).toEqual({ n: 1 });
    expect(s1.summary.payloadsKept).toBe(false);

    const s2 = t.activate(fact.completed('a#1', { ok: 'yes' }));
    expect(s2.summary).toMatchObject({ status: 'completed', result: { a: { ok: 'yes' } }, payloadsKept: false });
    expect(t.journalLines().join('\n')).not.toContain('"yes"');
  });

  it('a run rebuilt from its journal cannot continue: it fails with run.payloads-not-kept', () => {
    const t = protocolRun(template('meta', [node.start(), node.tool('a', 'charge'), node.end()]), { metadata: true });
    t.start({ n: 1 });
    t.restart();
    const s = t.activate(fact.completed('a#1', 'late'));
    expectEvents(s.events, [
      ev.cancelledCall('a#1', 'run failed'),
      ev.runFailed({ code: 'run.payloads-not-kept', message: 'run run-1 keeps no payloads (capture mode metadata) and was rebuilt from its journal, which holds only their digests; it cannot continue' }),
      { type: 'capability.late', payload: { invocationId: 'a#1', reason: 'run failed', ok: true, outputDigest: digest, outputBytes: 6 } },
    ]);
  });
});

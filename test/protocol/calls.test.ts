// Protocol tests of the nodes that call out (tool, agent, workflow): requests, outcomes,
// retries with their wake-up times, time limits.
import { describe, expect, it } from 'vitest';
import { bind, ev, expectEvents, fact, node, nodeFailure, protocolRun, refOf, t0, template, type Ev, type ProtocolRun } from './harness.js';

const echoTemplate = (extra: Record<string, unknown> = {}) =>
  template('echo', [node.start(), node.tool('echo', 'echo', { inputs: { text: bind.input('/text') }, ...extra }), node.end('end', { text: bind.output('echo', '/text') })]);

/** The events of a run that starts and reaches `first` through its start node. */
function opening(t: ProtocolRun, input: unknown, first: string): Ev[] {
  return [t.accepted(input), ev.started(), ev.nodeStarted('start'), ev.committed('start', input), ev.taken(0, 'start', first)];
}

const echoRequest = (inv: string, extra: Record<string, unknown> = {}) => ({ invocationId: inv, kind: 'tool', name: 'echo', effect: 'unknown', input: { text: 'hi' }, ...extra });

describe('start and end', () => {
  it('a run of start -> end completes with the input in one activation', () => {
    const t = protocolRun(template('empty', [node.start(), node.end()]));
    const s = t.start({ a: 1 });
    expectEvents(s.events, [...opening(t, { a: 1 }, 'end'), ev.nodeStarted('end'), ev.committed('end', {}), ev.runCompleted({})]);
    expect(s.summary).toEqual({ runId: 'run-1', status: 'completed', seq: 8, activation: 1, events: 8, result: {} });
    expect(s.requests).toEqual([]);
    // An ended run takes no checkpoint for ending (`checkpoint-v3`): nothing reads it hot again.
    expect(s.checkpoint).toBe(false);
  });

  it('a run of a plan without checkpoint-v3 ends with a checkpoint, as it was recorded', () => {
    const t = protocolRun(template('empty', [node.start(), node.end()]), { withoutFlags: ['checkpoint-v3'] });
    const s = t.start({ a: 1 });
    expectEvents(s.events, [...opening(t, { a: 1 }, 'end'), ev.nodeStarted('end'), ev.committed('end', {}), ev.runCompleted({}), ev.checkpoint()]);
    expect(s.summary).toMatchObject({ status: 'completed', seq: 9, events: 9 });
    expect(s.checkpoint).toBe(true);
  });

  it('an input that does not match inputSchema is refused and nothing is journaled', () => {
    const t = protocolRun(template('typed', [node.start(), node.end()], undefined, { inputSchema: { type: 'object', required: ['n'] } }));
    expect(t.refused(fact.runRequested({})).code).toBe('run.input-invalid');
    expect(t.events()).toEqual([]);
  });

  it('a run request with an authority or a timeout of the wrong shape is refused and nothing is journaled', () => {
    const t = protocolRun(template('checked', [node.start(), node.end()]));
    for (const authority of [undefined, null, 'admin', { id: 'a' }, { id: 'a', scopes: 'tool:*' }, { id: 'a', scopes: [7] }, { id: 7, scopes: [] }]) {
      expect(t.refused(fact.runRequested({}, { authority })).code, JSON.stringify(authority) ?? 'undefined').toBe('run.bad-authority');
    }
    for (const timeoutMs of ['60000', 0, -5, 1.5, null, 31 * 86_400_000 + 1]) {
      expect(t.refused(fact.runRequested({}, { timeoutMs })).code, JSON.stringify(timeoutMs)).toBe('run.bad-timeout');
    }
    expect(t.events()).toEqual([]);
    expect(t.start({}, { timeoutMs: 31 * 86_400_000 }).summary.status).toBe('completed');
  });
});

describe('tool.call@1', () => {
  it('requests the tool, commits its output and completes', () => {
    const t = protocolRun(echoTemplate());
    const s1 = t.start({ text: 'hi' });
    expectEvents(s1.events, [...opening(t, { text: 'hi' }, 'echo'), ev.nodeStarted('echo', {}, { inv: 'echo#1' }), ev.requested('echo#1', echoRequest('echo#1'))]);
    expect(s1.requests).toEqual([{ inv: 'echo#1', node: 'echo', attempt: 1, kind: 'tool', name: 'echo', input: { text: 'hi' }, effect: 'unknown', authority: { id: 'tester', scopes: ['*'] } }]);
    expect(s1.summary.status).toBe('running');
    expect(s1.summary.wakeAt).toBeUndefined();

    const s2 = t.activate(fact.completed('echo#1', { text: 'hi', extra: true }));
    expectEvents(s2.events, [
      ev.completedCall('echo#1', { text: 'hi', extra: true }),
      ev.committed('echo', { text: 'hi', extra: true }, { inv: 'echo#1' }),
      ev.taken(1, 'echo', 'end'),
      ev.nodeStarted('end'),
      ev.committed('end', { text: 'hi' }),
      ev.runCompleted({ text: 'hi' }),
    ]);
    expect(s2.summary).toMatchObject({ status: 'completed', result: { text: 'hi' }, activation: 2 });
    expect(s2.requests).toEqual([]);
  });

  it('a failed call without a retry policy fails the node and the run', () => {
    const t = protocolRun(echoTemplate());
    t.start({ text: 'hi' });
    const error = { code: 'tool.broken', message: 'it broke', retryable: true };
    const s = t.activate(fact.failed('echo#1', error));
    expectEvents(s.events, [ev.failedCall('echo#1', error), ev.nodeFailed('echo', error), ev.runFailed(nodeFailure('echo', error))]);
    expect(s.summary).toMatchObject({ status: 'failed', error: nodeFailure('echo', error) });
  });

  it('retries with exponential backoff: the wake-up time is the retry time', () => {
    const t = protocolRun(echoTemplate({ retry: { maxAttempts: 3, backoffMs: 1000, backoffMultiplier: 3 } }));
    t.start({ text: 'hi' });
    const error = { code: 'tool.busy', message: 'later', retryable: true };

    const s1 = t.activate(fact.failed('echo#1', error), t0 + 10);
    expectEvents(s1.events, [ev.failedCall('echo#1', error), { type: 'node.retry-scheduled', node: 'echo', attempt: 1, payload: { error, retryAt: t0 + 1010 } }]);
    expect(s1.summary).toMatchObject({ status: 'running', wakeAt: t0 + 1010 });
    expect(s1.requests).toEqual([]);

    // Too early: nothing happens.
    expect(t.wake(t0 + 1009).events).toEqual([]);

    const s2 = t.wake(t0 + 1010);
    expectEvents(s2.events, [ev.nodeStarted('echo', {}, { attempt: 2, inv: 'echo#2' }), ev.requested('echo#2', echoRequest('echo#2'))]);
    expect(s2.requests.map((r) => r.inv)).toEqual(['echo#2']);
    expect(s2.summary.wakeAt).toBeUndefined();

    // The second backoff is three times the first.
    const s3 = t.activate(fact.failed('echo#2', error), t0 + 2000);
    expectEvents(s3.events, [ev.failedCall('echo#2', error), { type: 'node.retry-scheduled', node: 'echo', attempt: 2, payload: { error, retryAt: t0 + 5000 } }]);
    expect(s3.summary.wakeAt).toBe(t0 + 5000);

    t.wake(t0 + 5000);
    const s4 = t.activate(fact.failed('echo#3', error));
    expectEvents(s4.events, [ev.failedCall('echo#3', error), ev.nodeFailed('echo', error, 3), ev.runFailed(nodeFailure('echo', error))]);
  });

  it('an error the tool calls not retryable is final, whatever the policy', () => {
    const t = protocolRun(echoTemplate({ retry: { maxAttempts: 3 } }));
    t.start({ text: 'hi' });
    const error = { code: 'tool.bad-input', message: 'no', retryable: false };
    const s = t.activate(fact.failed('echo#1', error));
    expectEvents(s.events, [ev.failedCall('echo#1', error), ev.nodeFailed('echo', error), ev.runFailed(nodeFailure('echo', error))]);
  });

  it('an unknown-effect call whose error does not say retryable is not retried', () => {
    const t = protocolRun(echoTemplate({ retry: { maxAttempts: 3 } }));
    t.start({ text: 'hi' });
    const s = t.activate({ type: 'capability-completed', invocationId: 'echo#1', ok: false, error: { code: 'tool.odd', message: 'hm' } });
    expectEvents(s.events, [
      ev.failedCall('echo#1', { code: 'tool.odd', message: 'hm' }),
      ev.nodeFailed('echo', { code: 'tool.odd', message: 'hm' }),
      ev.runFailed(nodeFailure('echo', { code: 'tool.odd', message: 'hm' })),
    ]);
  });

  it('an idempotent tool is retried at once (no backoff) on an error without retryable', () => {
    const t = protocolRun(echoTemplate({ config: { idempotent: true }, retry: { maxAttempts: 2 } }));
    t.start({ text: 'hi' });
    const error = { code: 'tool.odd', message: 'hm' };
    const s = t.activate(fact.failed('echo#1', error), t0 + 7);
    expectEvents(s.events, [
      ev.failedCall('echo#1', { ...error }),
      { type: 'node.retry-scheduled', node: 'echo', attempt: 1, payload: { error, retryAt: t0 + 7 } },
      ev.nodeStarted('echo', {}, { attempt: 2, inv: 'echo#2' }),
      ev.requested('echo#2', echoRequest('echo#2', { effect: 'idempotent' })),
    ]);
    expect(s.requests.map((r) => [r.inv, r.effect])).toEqual([['echo#2', 'idempotent']]);
  });

  it('a completion for a call not in flight is recorded as capability.late evidence', () => {
    const t = protocolRun(echoTemplate());
    t.start({ text: 'hi' });
    t.activate(fact.completed('echo#1', { text: 'hi' }));
    const s = t.activate(fact.completed('echo#1', { text: 'again' }));
    expectEvents(s.events, [{ type: 'capability.late', payload: { invocationId: 'echo#1', reason: 'run completed', ok: true, output: { text: 'again' } } }]);
    expect(s.summary.status).toBe('completed');
  });

  it('an output that fails the node\u2019s `expects` schema fails it with node.output-invalid', () => {
    const t = protocolRun(echoTemplate({ expects: { type: 'object', required: ['text'] } }));
    t.start({ text: 'hi' });
    const s = t.activate(fact.completed('echo#1', { other: 1 }));
    const error = { code: 'node.output-invalid', message: "node echo: the output does not match its schema: / must have required property 'text'", retryable: false };
    expectEvents(s.events, [ev.completedCall('echo#1', { other: 1 }), ev.nodeFailed('echo', error), ev.runFailed(nodeFailure('echo', error))]);
  });
});

describe('time limits (timeoutMs)', () => {
  it('a safe call past its time limit is cancelled and retried; the wake-up time is the limit', () => {
    const t = protocolRun(echoTemplate({ config: { idempotent: true }, timeoutMs: 500, retry: { maxAttempts: 2 } }));
    const s1 = t.start({ text: 'hi' });
    expectEvents(s1.events.slice(5), [ev.nodeStarted('echo', { timeoutAt: t0 + 500 }, { inv: 'echo#1' }), ev.requested('echo#1', echoRequest('echo#1', { effect: 'idempotent' }))]);
    expect(s1.requests[0].deadlineAt).toBe(t0 + 500);
    expect(s1.summary.wakeAt).toBe(t0 + 500);

    expect(t.wake(t0 + 499).events).toEqual([]);
    const s2 = t.wake(t0 + 500);
    const error = { code: 'node.timeout', message: 'node echo passed its time limit', retryable: true };
    expectEvents(s2.events, [
      ev.cancelledCall('echo#1', 'node timed out'),
      { type: 'node.retry-scheduled', node: 'echo', attempt: 1, payload: { error, retryAt: t0 + 500 } },
      ev.nodeStarted('echo', { timeoutAt: t0 + 1000 }, { attempt: 2, inv: 'echo#2' }),
      ev.requested('echo#2', echoRequest('echo#2', { effect: 'idempotent' })),
    ]);
    expect(s2.cancels).toEqual([{ inv: 'echo#1', reason: 'node timed out' }]);
    expect(s2.requests.map((r) => [r.inv, r.deadlineAt])).toEqual([['echo#2', t0 + 1000]]);
    expect(s2.summary.wakeAt).toBe(t0 + 1000);

    // The first attempt's answer arrives after all: evidence only.
    const s3 = t.activate(fact.completed('echo#1', { text: 'late' }), t0 + 600);
    expectEvents(s3.events, [{ type: 'capability.late', payload: { invocationId: 'echo#1', reason: 'not in flight', ok: true, output: { text: 'late' } } }]);
    const s4 = t.activate(fact.completed('echo#2', { text: 'hi' }));
    expect(s4.summary.status).toBe('completed');
  });

  it('an unknown-effect call past its time limit is abandoned and needs attention', () => {
    const t = protocolRun(echoTemplate({ timeoutMs: 500, retry: { maxAttempts: 2 } }));
    t.start({ text: 'hi' });
    const s = t.wake(t0 + 500);
    const reason = 'node echo passed its time limit before the outcome was recorded; it is unknown whether the call took effect';
    expectEvents(s.events, [
      { type: 'capability.abandoned', ...refOf('echo#1'), payload: { invocationId: 'echo#1', reason } },
      { type: 'node.needs-attention', node: 'echo', attempt: 1, payload: { invocationId: 'echo#1', evidence: { kind: 'tool', name: 'echo', effect: 'unknown', requestedSeq: 7, reason: 'timeout' } } },
      ev.paused('needs_attention'),
      ev.checkpoint(),
    ]);
    expect(s.cancels).toEqual([{ inv: 'echo#1', reason }]);
    expect(s.summary).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });
    expect(s.summary.wakeAt).toBeUndefined();
  });
});

describe('agent.run@1', () => {
  const agentTemplate = (extra: Record<string, unknown> = {}) =>
    template('agent', [
      node.start(),
      node.agent('ask', 'writer', { config: { instructions: 'Be brief.', outputSchema: { type: 'object', required: ['answer'], properties: { answer: { type: 'string' } } } }, inputs: { q: bind.input('/q') }, ...extra }),
      node.end('end', { answer: bind.output('ask', '/answer') }),
    ]);

  it('sends instructions and output schema; an output that fails the schema fails the node (retryable)', () => {
    const t = protocolRun(agentTemplate());
    const s1 = t.start({ q: 'why?' });
    expect(s1.requests).toEqual([
      {
        inv: 'ask#1',
        node: 'ask',
        attempt: 1,
        kind: 'agent',
        name: 'writer',
        input: { q: 'why?' },
        effect: 'unknown',
        config: { instructions: 'Be brief.', outputSchema: { type: 'object', required: ['answer'], properties: { answer: { type: 'string' } } } },
        authority: { id: 'tester', scopes: ['*'] },
      },
    ]);
    const s2 = t.activate(fact.completed('ask#1', { answer: 42 }));
    const error = { code: 'node.output-invalid', message: 'node ask: the output does not match its schema: /answer must be string', retryable: true };
    expectEvents(s2.events, [ev.completedCall('ask#1', { answer: 42 }), ev.nodeFailed('ask', error), ev.runFailed(nodeFailure('ask', error))]);
  });

  it('an invalid output is retried under a retry policy, and a valid one completes the run', () => {
    const t = protocolRun(agentTemplate({ retry: { maxAttempts: 2, backoffMs: 100 } }));
    t.start({ q: 'why?' });
    const s1 = t.activate(fact.completed('ask#1', { nope: true }));
    const error = { code: 'node.output-invalid', message: "node ask: the output does not match its schema: / must have required property 'answer'", retryable: true };
    expectEvents(s1.events, [ev.completedCall('ask#1', { nope: true }), { type: 'node.retry-scheduled', node: 'ask', attempt: 1, payload: { error, retryAt: t0 + 100 } }]);
    t.wake(t0 + 100);
    const s2 = t.activate(fact.completed('ask#2', { answer: 'because' }));
    expect(s2.summary).toMatchObject({ status: 'completed', result: { answer: 'because' } });
  });
});

describe('workflow.call@1', () => {
  const child = { template: template('child', [node.start(), node.end()]), revision: 3 };
  it('requests the child workflow from the host (idempotent) and commits its result', () => {
    const t = protocolRun(template('parent', [node.start(), node.call('sub', { id: 'child', revision: 3 }, { inputs: { x: bind.input('/x') } }), node.end('end', { r: bind.output('sub') })]), { dependencies: [child] });
    expect(Object.keys(t.plan.templates).sort()).toEqual(['child@3', 'parent@inline']);
    const s1 = t.start({ x: 1 });
    expectEvents(s1.events.slice(5), [ev.nodeStarted('sub', {}, { inv: 'sub#1' }), ev.requested('sub#1', { kind: 'workflow', name: 'child@3', effect: 'idempotent', input: { x: 1 } })]);
    expect(s1.requests).toEqual([{ inv: 'sub#1', node: 'sub', attempt: 1, kind: 'workflow', name: 'child@3', input: { x: 1 }, effect: 'idempotent', authority: { id: 'tester', scopes: ['*'] } }]);
    const s2 = t.activate(fact.completed('sub#1', { done: true }));
    expect(s2.summary).toMatchObject({ status: 'completed', result: { r: { done: true } } });
  });

  it('a run launched as a child records its parent', () => {
    const t = protocolRun(child.template);
    const s = t.start({}, { parentRunId: 'run-0' });
    expectEvents(s.events.slice(0, 1), [t.accepted({}, { parentRunId: 'run-0' })]);
  });
});

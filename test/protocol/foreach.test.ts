// Protocol tests of core.foreach@1: concurrency, failure policies, item retries, cancellation of
// running items, script bodies.
import { describe, expect, it } from 'vitest';
import { bind, ev, expectEvents, fact, node, nodeFailure, protocolRun, refOf, t0, template, type Ev } from './harness.js';

const lookup = { uses: 'tool.call@1', config: { tool: 'lookup' } };

const foreachTemplate = (config: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  template('each', [node.start(), node.foreach('each', bind.input('/items'), lookup, config, extra), node.end('end', { r: bind.output('each') })]);

const itemStarted = (inv: string): Ev => ({ type: 'node.item-started', ...refOf(inv), payload: { index: refOf(inv).item } });
const itemRequested = (inv: string, input: unknown): Ev => ev.requested(inv, { kind: 'tool', name: 'lookup', effect: 'unknown', input, item: refOf(inv).item });
/** An item's settlement names its node, attempt and item, not its invocation. */
const itemRef = (inv: string) => {
  const { inv: _inv, ...ref } = refOf(inv);
  return ref;
};
const itemCommitted = (inv: string, output: unknown): Ev => ({ type: 'node.item-committed', ...itemRef(inv), payload: { index: refOf(inv).item, output } });
const itemFailed = (inv: string, error: Record<string, unknown>, final: boolean): Ev => ({ type: 'node.item-failed', ...itemRef(inv), payload: { index: refOf(inv).item, error, final } });

describe('core.foreach@1', () => {
  it('starts items up to maxConcurrency and the next one as each settles', () => {
    const t = protocolRun(foreachTemplate({ maxConcurrency: 2 }));
    const s1 = t.start({ items: ['a', 'b', 'c'] });
    expectEvents(s1.events.slice(5), [
      ev.nodeStarted('each', { foreach: { items: ['a', 'b', 'c'], maxConcurrency: 2, failurePolicy: 'fail-fast' } }),
      itemStarted('each[0]#1'),
      itemRequested('each[0]#1', 'a'),
      itemStarted('each[1]#1'),
      itemRequested('each[1]#1', 'b'),
    ]);
    expect(s1.requests.map((r) => [r.inv, r.item, r.input])).toEqual([
      ['each[0]#1', 0, 'a'],
      ['each[1]#1', 1, 'b'],
    ]);

    const s2 = t.activate(fact.completed('each[1]#1', 'B'));
    expectEvents(s2.events, [ev.completedCall('each[1]#1', 'B'), itemCommitted('each[1]#1', 'B'), itemStarted('each[2]#1'), itemRequested('each[2]#1', 'c')]);

    const s3 = t.activate([fact.completed('each[2]#1', 'C'), fact.completed('each[0]#1', 'A')]);
    expectEvents(s3.events, [
      ev.completedCall('each[2]#1', 'C'),
      itemCommitted('each[2]#1', 'C'),
      ev.completedCall('each[0]#1', 'A'),
      itemCommitted('each[0]#1', 'A'),
      ev.committed('each', { results: ['A', 'B', 'C'], failures: [] }),
      ev.taken(1, 'each', 'end'),
      ev.nodeStarted('end'),
      ev.committed('end', { r: { results: ['A', 'B', 'C'], failures: [] } }),
      ev.runCompleted({ r: { results: ['A', 'B', 'C'], failures: [] } }),
    ]);
  });

  it('fail-fast: a failed item cancels the running ones and fails the node; late answers are evidence', () => {
    const t = protocolRun(foreachTemplate({ maxConcurrency: 3 }));
    t.start({ items: [1, 2, 3] });
    const error = { code: 'lookup.missing', message: 'not found', retryable: false };
    const s = t.activate(fact.failed('each[1]#1', error));
    const nodeError = { code: 'foreach.item-failed', message: 'item 1 failed: not found', retryable: false, detail: { index: 1, error } };
    expectEvents(s.events, [
      ev.failedCall('each[1]#1', error),
      itemFailed('each[1]#1', error, true),
      ev.cancelledCall('each[0]#1', 'item 1 failed'),
      ev.cancelledCall('each[2]#1', 'item 1 failed'),
      ev.nodeFailed('each', nodeError),
      ev.runFailed(nodeFailure('each', nodeError)),
    ]);
    expect(s.cancels).toEqual([
      { inv: 'each[0]#1', reason: 'item 1 failed' },
      { inv: 'each[2]#1', reason: 'item 1 failed' },
    ]);
    expect(s.summary).toMatchObject({ status: 'failed', error: nodeFailure('each', nodeError) });

    const late = t.activate(fact.completed('each[0]#1', 'A'));
    expectEvents(late.events, [{ type: 'capability.late', payload: { invocationId: 'each[0]#1', reason: 'run failed', ok: true, output: 'A' } }]);
    expect(late.summary).toMatchObject({ status: 'failed', error: nodeFailure('each', nodeError) });
  });

  it('continue: failed items are listed in `failures` and the others go on', () => {
    const t = protocolRun(foreachTemplate({ maxConcurrency: 3, failurePolicy: 'continue' }));
    t.start({ items: [1, 2, 3] });
    const error = { code: 'lookup.missing', message: 'not found', retryable: false };
    const s1 = t.activate([fact.completed('each[0]#1', 'A'), fact.failed('each[1]#1', error)]);
    expectEvents(s1.events, [ev.completedCall('each[0]#1', 'A'), itemCommitted('each[0]#1', 'A'), ev.failedCall('each[1]#1', error), itemFailed('each[1]#1', error, true)]);
    const s2 = t.activate(fact.completed('each[2]#1', 'C'));
    const output = { results: ['A', null, 'C'], failures: [{ index: 1, error }] };
    expectEvents(s2.events.slice(0, 3), [ev.completedCall('each[2]#1', 'C'), itemCommitted('each[2]#1', 'C'), ev.committed('each', output)]);
    expect(s2.summary).toMatchObject({ status: 'completed', result: { r: output } });
  });

  it('an item is retried under the node\u2019s retry policy as its own next attempt', () => {
    const t = protocolRun(foreachTemplate({ maxConcurrency: 1 }, { retry: { maxAttempts: 2 } }));
    t.start({ items: ['x'] });
    const error = { code: 'lookup.busy', message: 'busy', retryable: true };
    const s = t.activate(fact.failed('each[0]#1', error));
    expectEvents(s.events, [ev.failedCall('each[0]#1', error), itemFailed('each[0]#1', error, false), itemStarted('each[0]#2'), itemRequested('each[0]#2', 'x')]);
    expect(s.requests.map((r) => [r.inv, r.attempt])).toEqual([['each[0]#2', 2]]);
    expect(t.activate(fact.completed('each[0]#2', 'X')).summary).toMatchObject({ status: 'completed', result: { r: { results: ['X'], failures: [] } } });
  });

  it('cancelling the run cancels every running item and the node', () => {
    const t = protocolRun(foreachTemplate({ maxConcurrency: 2 }));
    t.start({ items: [1, 2, 3] });
    const s = t.activate(fact.cancel('enough', 'operator:bob'));
    expectEvents(s.events, [
      { type: 'run.cancel-requested', payload: { reason: 'enough', by: 'operator:bob' } },
      ev.cancelledCall('each[0]#1', 'run cancelled'),
      ev.cancelledCall('each[1]#1', 'run cancelled'),
      { type: 'node.cancelled', node: 'each', attempt: 1, payload: { reason: 'enough' } },
      { type: 'run.cancelled', payload: { reason: 'enough', by: 'operator:bob' } },
    ]);
    expect(s.cancels.map((c) => c.inv)).toEqual(['each[0]#1', 'each[1]#1']);
    expect(s.summary.status).toBe('cancelled');
  });

  it('past its time limit, items with unknown effects are cancelled and the node fails without a retry', () => {
    const t = protocolRun(foreachTemplate({ maxConcurrency: 2 }, { timeoutMs: 100, retry: { maxAttempts: 3 } }));
    const s1 = t.start({ items: [1, 2, 3] });
    expect(s1.requests.map((r) => [r.inv, r.deadlineAt])).toEqual([
      ['each[0]#1', t0 + 100],
      ['each[1]#1', t0 + 100],
    ]);
    expect(s1.summary.wakeAt).toBe(t0 + 100);
    const s2 = t.wake(t0 + 100);
    const error = { code: 'node.timeout', message: 'node each passed its time limit; its items have effects that are not known to be safe to repeat, so it is not retried', retryable: false };
    expectEvents(s2.events, [ev.cancelledCall('each[0]#1', 'node timed out'), ev.cancelledCall('each[1]#1', 'node timed out'), ev.nodeFailed('each', error), ev.runFailed(nodeFailure('each', error))]);
    expect(s2.cancels.map((c) => c.inv)).toEqual(['each[0]#1', 'each[1]#1']);
  });

  it('past its time limit, a foreach of idempotent items is retried from its first item', () => {
    const t = protocolRun(template('each', [node.start(), node.foreach('each', bind.input('/items'), { uses: 'tool.call@1', config: { tool: 'lookup', idempotent: true } }, { maxConcurrency: 1 }, { timeoutMs: 100, retry: { maxAttempts: 2 } }), node.end()]));
    t.start({ items: [1, 2] });
    t.activate(fact.completed('each[0]#1', 'A'), t0 + 50);
    const s = t.wake(t0 + 100);
    const error = { code: 'node.timeout', message: 'node each passed its time limit', retryable: true };
    expectEvents(s.events, [
      ev.cancelledCall('each[1]#1', 'node timed out'),
      { type: 'node.retry-scheduled', node: 'each', attempt: 1, payload: { error, retryAt: t0 + 100 } },
      ev.nodeStarted('each', { timeoutAt: t0 + 200, foreach: { items: [1, 2], maxConcurrency: 1, failurePolicy: 'fail-fast' } }, { attempt: 2 }),
      // The node's second attempt runs its items under new invocation ids.
      itemStarted('each@2[0]#1'),
      ev.requested('each@2[0]#1', { kind: 'tool', name: 'lookup', effect: 'idempotent', input: 1, item: 0 }),
    ]);
    expect(s.requests.map((r) => r.inv)).toEqual(['each@2[0]#1']);
  });

  it('a script body runs every item inside the activation', () => {
    const t = protocolRun(template('scripts', [node.start(), node.foreach('sq', bind.input('/n'), { uses: 'core.script@1', config: { source: 'return input * input' } }, { maxConcurrency: 2 }), node.end('end', { r: bind.output('sq', '/results') })]));
    const s = t.start({ n: [2, 3] });
    expectEvents(s.events.slice(5, 11), [
      ev.nodeStarted('sq', { foreach: { items: [2, 3], maxConcurrency: 2, failurePolicy: 'fail-fast' } }),
      { type: 'node.item-started', node: 'sq', attempt: 1, item: 0, inv: 'sq[0]#1', payload: { index: 0 } },
      { type: 'node.item-committed', node: 'sq', attempt: 1, item: 0, payload: { index: 0, output: 4 } },
      { type: 'node.item-started', node: 'sq', attempt: 1, item: 1, inv: 'sq[1]#1', payload: { index: 1 } },
      { type: 'node.item-committed', node: 'sq', attempt: 1, item: 1, payload: { index: 1, output: 9 } },
      ev.committed('sq', { results: [4, 9], failures: [] }),
    ]);
    expect(s.requests).toEqual([]);
    expect(s.summary.result).toEqual({ r: [4, 9] });
  });

  it('items that are not an array fail the node', () => {
    const t = protocolRun(foreachTemplate({}));
    const s = t.start({ items: 'abc' });
    const error = { code: 'foreach.items-not-array', message: 'the "items" input of each is string, not an array', retryable: false };
    expectEvents(s.events.slice(5), [ev.nodeStarted('each'), ev.nodeFailed('each', error), ev.runFailed(nodeFailure('each', error))]);
  });
});

// Protocol tests of rules that cut across node kinds: authority and capabilities, input defaults,
// the run clock, checkpoints in the middle of a run and a rebuild from one.
import { describe, expect, it } from 'vitest';
import { authority, bind, ev, expectEvents, fact, node, nodeFailure, protocolRun, t0, template } from './harness.js';

describe('authority', () => {
  it('a call the run\u2019s authority does not grant fails its node with capability.denied', () => {
    const t = protocolRun(template('denied', [node.start(), node.tool('pay', 'payments'), node.end()]));
    const s = t.start({}, { authority: { id: 'intern', scopes: ['tool:search'] } });
    const error = { code: 'capability.denied', message: 'authority intern does not grant tool:payments', retryable: false };
    expectEvents(s.events.slice(5), [ev.nodeStarted('pay', {}, { inv: 'pay#1' }), ev.nodeFailed('pay', error), ev.runFailed(nodeFailure('pay', error))]);
    expect(s.requests).toEqual([]);
  });

  it('a safe call reissued after a restart is checked against the authority of that resume', () => {
    const t = protocolRun(template('reissue', [node.start(), node.tool('look', 'lookup', { readOnly: true }), node.end()]));
    t.start({});
    t.restart();
    const narrower = { id: 'auditor', scopes: ['tool:other'] };
    const s = t.activate(fact.restarted({ authority: narrower }));
    const error = { code: 'capability.denied', message: 'authority auditor does not grant tool:lookup', retryable: false };
    expectEvents(s.events, [
      { type: 'run.resumed', payload: { by: 'host', authority: narrower, afterRestart: true } },
      ev.cancelledCall('look#1', error.message),
      ev.nodeFailed('look', error),
      ev.runFailed(nodeFailure('look', error)),
    ]);
    expect(s.cancels).toEqual([{ inv: 'look#1', reason: error.message }]);
    expect(s.requests).toEqual([]);
  });

  it('a reissued call carries the authority of the resume that reissued it', () => {
    const t = protocolRun(template('reissue', [node.start(), node.tool('look', 'lookup', { readOnly: true }), node.end()]));
    t.start({});
    t.restart();
    const other = { id: 'ops', scopes: ['tool:*'] };
    const s = t.activate(fact.restarted({ authority: other }));
    expect(s.requests).toEqual([{ inv: 'look#1', node: 'look', attempt: 1, kind: 'tool', name: 'lookup', input: {}, effect: 'read-only', reissued: true, authority: other }]);
  });
});

describe('run input', () => {
  it('defaults of inputSchema are applied and recorded in run.accepted', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer', default: 3 } } };
    const t = protocolRun(template('defaults', [node.start(), node.end('end', { n: bind.input('/n') })], undefined, { inputSchema: schema }));
    const s = t.start({});
    expectEvents(s.events.slice(0, 1), [t.accepted({ n: 3 })]);
    expect(s.summary.result).toEqual({ n: 3 });
  });
});

describe('the run clock', () => {
  it('an activation with an earlier `now` does not move the run\u2019s time back', () => {
    const t = protocolRun(template('clock', [node.start(), node.tool('a', 'slow', { config: { idempotent: true }, retry: { maxAttempts: 2, backoffMs: 100 } }), node.end()]));
    t.start({}, {}, t0 + 1000);
    const error = { code: 'slow.busy', message: 'busy', retryable: true };
    // The host's clock went back 900 ms: the retry is scheduled from the run's time, not the host's.
    const s = t.activate(fact.failed('a#1', error), t0 + 100);
    expectEvents(s.events, [ev.failedCall('a#1', error), { type: 'node.retry-scheduled', node: 'a', attempt: 1, payload: { error, retryAt: t0 + 1100 } }]);
    expect(s.summary.wakeAt).toBe(t0 + 1100);
  });
});

describe('checkpoints', () => {
  /** A foreach of `n` tool items, all started at once. */
  const many = (n: number) => template('many', [node.start(), node.foreach('each', bind.input('/items'), { uses: 'tool.call@1', config: { tool: 'echo' } }, { maxConcurrency: 256, maxItems: n }), node.end()]);

  it('a long activation is checkpointed on the way (every 512 events), and the checkpoint equals the fold', () => {
    const t = protocolRun(many(150));
    const items = Array.from({ length: 150 }, (_, i) => i);
    const s1 = t.start({ items });
    // 6 opening events, then two per started item: 306 events and no checkpoint yet.
    expect(s1.events.length).toBe(306);
    expect(s1.checkpoint).toBe(false);
    // Each completion writes two events (capability.completed, node.item-committed): the journal
    // passes 512 events and a checkpoint is taken although the run is still running.
    const s2 = t.activate(items.slice(0, 120).map((i) => fact.completed(`each[${i}]#1`, i)));
    expect(s2.summary.status).toBe('running');
    expect(s2.checkpoint).toBe(true);
    expect(s2.events[s2.events.length - 1]).toEqual(ev.checkpoint());
    expect(t.foldChecks).toBeGreaterThan(2);

    // A cold rebuild reads that checkpoint and only the events after it.
    t.restart();
    const s3 = t.activate(items.slice(120).map((i) => fact.completed(`each[${i}]#1`, i)));
    expect(s3.summary).toMatchObject({ status: 'completed' });
  });

  /**
   * Runs a foreach of `n` items, 32 at a time, answering every call of an activation in the next,
   * with a restart (cold rebuild) every 20 activations; answers the seq of each checkpoint taken
   * before the run came to rest.
   */
  function checkpointSeqs(n: number, withoutFlags?: string[]): number[] {
    const tmpl = template('long', [node.start(), node.foreach('each', bind.input('/items'), { uses: 'tool.call@1', config: { tool: 'echo' } }, { maxConcurrency: 32, maxItems: n }), node.end()]);
    const t = protocolRun(tmpl, withoutFlags ? { withoutFlags } : {});
    const seqs: number[] = [];
    let step = t.start({ items: Array.from({ length: n }, (_, i) => i) });
    for (let activations = 1; step.summary.status === 'running'; activations++) {
      if (step.checkpoint) seqs.push(step.summary.seq);
      if (activations % 20 === 0) t.restart();
      step = t.activate(step.requests.map((r) => fact.completed(r.inv, r.input)));
    }
    expect(step.summary.status).toBe('completed');
    return seqs;
  }

  it('with checkpoint-v2 the interval is an eighth of the events before the previous checkpoint, from 512 events; an older plan keeps 512', () => {
    const perActivation = 4 * 32; // two events per answered item, two per started one
    const intervals = (seqs: number[]) => seqs.slice(1).map((c, i) => ({ from: seqs[i], length: c - seqs[i] }));

    const grown = intervals(checkpointSeqs(2_400));
    for (const { from, length } of grown) {
      const interval = Math.max(512, Math.floor(from / 8));
      // Taken by the first activation that reached the interval.
      expect(length).toBeGreaterThanOrEqual(interval);
      expect(length).toBeLessThan(interval + perActivation + 1);
    }
    expect(Math.max(...grown.map((g) => g.length))).toBeGreaterThan(1_000);

    const fixed = intervals(checkpointSeqs(2_400, ['checkpoint-v2']));
    for (const { length } of fixed) {
      expect(length).toBeGreaterThanOrEqual(512);
      expect(length).toBeLessThan(512 + perActivation + 1);
    }
    expect(grown.length).toBeLessThan(fixed.length);
  });
});

describe('the activation contract', () => {
  it('a fact for a run that does not exist is refused', () => {
    const t = protocolRun(template('none', [node.start(), node.end()]));
    expect(t.refused(fact.cancel()).code).toBe('engine.unknown-run');
  });

  it('an unknown fact type is refused and nothing is committed', () => {
    const t = protocolRun(template('two', [node.start(), node.tool('a', 'x'), node.end()]));
    t.start({});
    expect(t.refused({ type: 'node-completed' })).toEqual({ code: 'engine.bad-activation', message: 'unknown fact type "node-completed"' });
    // The engine dropped the run from memory on the refusal; it goes on from its journal.
    expect(t.activate(fact.completed('a#1', 1)).summary.status).toBe('completed');
  });

  it('the authority of the launch is recorded as given', () => {
    const t = protocolRun(template('auth', [node.start(), node.end()]));
    const s = t.start({}, { authority: { ...authority, id: 'svc' } });
    expectEvents(s.events.slice(0, 1), [t.accepted({}, { authority: { ...authority, id: 'svc' } })]);
  });
});

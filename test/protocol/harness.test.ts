// The twins that must fail: the harness's comparisons catch a payload, a node reference or an
// event that differs, and a state that was changed outside the fold of the events.
import { describe, expect, it } from 'vitest';
import { bind, ev, expectEvents, fact, node, protocolRun, template } from './harness.js';

const echo = () => template('echo', [node.start(), node.tool('echo', 'echo', { inputs: { text: bind.input('/text') } }), node.end('end', { text: bind.output('echo', '/text') })]);

describe('protocol harness', () => {
  it('expectEvents fails on a different payload, node reference, a missing or an extra event', () => {
    const t = protocolRun(echo());
    const s = t.start({ text: 'hi' });
    const exact = [
      t.accepted({ text: 'hi' }),
      ev.started(),
      ev.nodeStarted('start'),
      ev.committed('start', { text: 'hi' }),
      ev.taken(0, 'start', 'echo'),
      ev.nodeStarted('echo', {}, { inv: 'echo#1' }),
      ev.requested('echo#1', { kind: 'tool', name: 'echo', effect: 'unknown', input: { text: 'hi' } }),
    ];
    expectEvents(s.events, exact);
    const variants = [
      exact.map((e, i) => (i === 3 ? ev.committed('start', { text: 'ho' }) : e)),
      exact.map((e, i) => (i === 3 ? { ...e, payload: { ...e.payload, extra: 1 } } : e)),
      exact.map((e, i) => (i === 5 ? { ...e, attempt: 2 } : e)),
      exact.map((e, i) => (i === 5 ? { ...e, inv: 'echo#2' } : e)),
      exact.map((e, i) => (i === 5 ? { ...e, node: 'end' } : e)),
      exact.map((e, i) => (i === 4 ? ev.taken(0, 'start', 'echo', 'true') : e)),
      exact.slice(0, -1),
      [...exact, ev.checkpoint()],
      [exact[1], exact[0], ...exact.slice(2)],
    ];
    for (const wrong of variants) expect(() => expectEvents(s.events, wrong)).toThrow();
  });

  it('a state changed outside the fold of the events fails the next activation', () => {
    const t = protocolRun(echo());
    t.start({ text: 'hi' });
    // What a decision that bypasses `reduce` does: the state in memory moves, the journal does not.
    const hot = (t as unknown as { core: { hot: Map<string, { state: { nodes: Record<string, { attempt: number }> } }> } }).core.hot;
    hot.get(t.runId)!.state.nodes.echo.attempt = 7;
    expect(() => t.activate(fact.resume())).toThrow(/fold of every event/);
  });

  it('a checkpoint that differs from the fold fails the commit that wrote it', () => {
    // Without `checkpoint-v3` the run takes a checkpoint as it ends.
    const t = protocolRun(echo(), { withoutFlags: ['checkpoint-v3'] });
    t.start({ text: 'hi' });
    const hot = (t as unknown as { core: { hot: Map<string, { state: { nodes: Record<string, { attempt: number }> } }> } }).core.hot;
    hot.get(t.runId)!.state.nodes.start.attempt = 5;
    // The run completes: it leaves the hot set, and its checkpoint shows the difference.
    expect(() => t.activate(fact.completed('echo#1', { text: 'hi' }))).toThrow(/checkpoint equals the fold/);
  });

  it('the state of a run that ended, which no checkpoint holds, is compared with the fold', () => {
    const t = protocolRun(echo());
    t.start({ text: 'hi' });
    const hot = (t as unknown as { core: { hot: Map<string, { state: { nodes: Record<string, { attempt: number }> } }> } }).core.hot;
    hot.get(t.runId)!.state.nodes.start.attempt = 5;
    expect(() => t.activate(fact.completed('echo#1', { text: 'hi' }))).toThrow(/fold of every event/);
  });

  it('an invocation id that no event announced is passed through and answered as evidence', () => {
    const t = protocolRun(echo());
    t.start({ text: 'hi' });
    const s = t.activate(fact.completed('iv-unknown', 1));
    expectEvents(s.events, [{ type: 'capability.late', payload: { invocationId: 'iv-unknown', reason: 'not in flight', ok: true, output: 1 } }]);
  });
});

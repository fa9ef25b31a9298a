// Protocol tests of the nodes decided inside the engine: conditions with their ports, skips that
// propagate to a join or to the end, scripts.
import { describe, expect, it } from 'vitest';
import { bind, ev, expectEvents, node, nodeFailure, protocolRun, template } from './harness.js';

/**
 * start -> check; check -true-> yes; check -false-> no; yes -> join; no -> join; join -> end.
 * `join` is a script that answers which side reached it.
 */
const branching = () =>
  template(
    'branch',
    [
      node.start(),
      node.condition('check', 'gt', bind.input('/n'), bind.literal(10)),
      node.script('yes', 'return "big"'),
      node.script('no', 'return "small"'),
      node.script('join', 'return input.yes ?? input.no', { inputs: { yes: bind.output('yes'), no: bind.output('no') } }),
      node.end('end', { size: bind.output('join') }),
    ],
    ['start -> check', 'check -true-> yes', 'check -false-> no', 'yes -> join', 'no -> join', 'join -> end'],
  );

describe('core.condition@1', () => {
  it('true: the true port is taken, the false side is skipped, and the join runs', () => {
    const t = protocolRun(branching());
    const s = t.start({ n: 11 });
    expectEvents(s.events, [
      t.accepted({ n: 11 }),
      ev.started(),
      ev.nodeStarted('start'),
      ev.committed('start', { n: 11 }),
      ev.taken(0, 'start', 'check'),
      ev.nodeStarted('check'),
      ev.committed('check', { result: true }),
      ev.taken(1, 'check', 'yes', 'true'),
      ev.skippedEdge(2, 'check', 'no', 'false'),
      ev.nodeStarted('yes'),
      ev.committed('yes', 'big'),
      ev.taken(3, 'yes', 'join'),
      ev.nodeSkipped('no'),
      ev.skippedEdge(4, 'no', 'join'),
      ev.nodeStarted('join'),
      ev.committed('join', 'big'),
      ev.taken(5, 'join', 'end'),
      ev.nodeStarted('end'),
      ev.committed('end', { size: 'big' }),
      ev.runCompleted({ size: 'big' }),
    ]);
  });

  it('false: the false port is taken and the true side is skipped', () => {
    const t = protocolRun(branching());
    const s = t.start({ n: 3 });
    expectEvents(s.events.slice(6, 15), [
      ev.committed('check', { result: false }),
      ev.skippedEdge(1, 'check', 'yes', 'true'),
      ev.taken(2, 'check', 'no', 'false'),
      ev.nodeSkipped('yes'),
      ev.skippedEdge(3, 'yes', 'join'),
      ev.nodeStarted('no'),
      ev.committed('no', 'small'),
      ev.taken(4, 'no', 'join'),
      ev.nodeStarted('join'),
    ]);
    expect(s.summary).toMatchObject({ status: 'completed', result: { size: 'small' } });
  });

  it('a skip propagates down a chain; a run whose every end is skipped fails', () => {
    const t = protocolRun(
      template('dead-end', [node.start(), node.condition('check', 'truthy', bind.input('/go')), node.script('a', 'return 1'), node.end()], ['start -> check', 'check -true-> a', 'a -> end']),
    );
    const s = t.start({ go: false });
    expectEvents(s.events.slice(6), [
      ev.committed('check', { result: false }),
      ev.skippedEdge(1, 'check', 'a', 'true'),
      ev.nodeSkipped('a'),
      ev.skippedEdge(2, 'a', 'end'),
      ev.nodeSkipped('end'),
      ev.runFailed({ code: 'run.no-end-reached', message: 'every path to a core.end@1 node was skipped' }),
    ]);
  });
});

describe('core.script@1', () => {
  it('runs the script in the sandbox on its inputs and commits what it returns', () => {
    const t = protocolRun(template('double', [node.start(), node.script('double', 'return input.n * 2', { inputs: { n: bind.input('/n') } }), node.end('end', { r: bind.output('double') })]));
    const s = t.start({ n: 21 });
    expectEvents(s.events.slice(5, 8), [ev.nodeStarted('double'), ev.committed('double', 42), ev.taken(1, 'double', 'end')]);
    expect(s.summary.result).toEqual({ r: 42 });
  });

  it('a script that throws fails its node with the sandbox error', () => {
    const t = protocolRun(template('throws', [node.start(), node.script('bad', 'throw new Error("nope")'), node.end()]));
    const s = t.start({});
    const error = { code: 'script.runtime', message: 'line 1: Error: nope', retryable: false };
    expectEvents(s.events.slice(5), [ev.nodeStarted('bad'), ev.nodeFailed('bad', error), ev.runFailed(nodeFailure('bad', error))]);
  });

  it('a binding to a path the upstream output lacks fails the node (binding.missing)', () => {
    const t = protocolRun(template('missing', [node.start(), node.script('a', 'return {}'), node.script('b', 'return 1', { inputs: { x: bind.output('a', '/x') } }), node.end()]));
    const s = t.start({});
    const error = { code: 'binding.missing', message: 'node b: input "x" is bound to a/x, which the output of a does not have', retryable: false, detail: { input: 'x', nodeId: 'a', path: '/x' } };
    expectEvents(s.events.slice(8), [ev.nodeStarted('b'), ev.nodeFailed('b', error), ev.runFailed(nodeFailure('b', error))]);
  });
});

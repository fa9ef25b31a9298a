// The agent loop in the engine (`agent.run@1` with a `model`): turns and tool calls as
// invocations of their own, the allow-lists checked at every call, the conversation folded from
// journaled outputs only, budgets, and the answer checked against `outputSchema`. Each test is a
// script of facts and the whole output of each activation (test/protocol/harness.ts).
import { describe, expect, it } from 'vitest';
import { authority, ev, expectEvents, fact, nodeFailure, protocolRun, t0 } from '../protocol/harness.js';
import { agentEv, agentTemplate, assistant, question, toolMessage, turnOutput, turnRequest, userMessage, type Call } from './agent-builders.js';

const search: Call = { id: 'c1', name: 'search', input: { q: 'why' } };
const erase: Call = { id: 'c2', name: 'erase', input: {} };
const charge: Call = { id: 'c3', name: 'charge', input: { cents: 100 } };

describe('the agent loop', () => {
  it('runs turns: a model turn, its tool calls (a refused one answered, never requested), the next turn, the answer', () => {
    const t = protocolRun(agentTemplate());
    const s1 = t.start(question);
    const t1 = turnRequest('ag#1/t1', 1, [userMessage]);
    expectEvents(s1.events.slice(5), [ev.nodeStarted('ag'), t1.event]);
    expect(s1.requests).toEqual([t1.request]);

    const s2 = t.activate(fact.completed('ag#1/t1', turnOutput([search, erase])), t0 + 10);
    expectEvents(s2.events, [
      ev.completedCall('ag#1/t1', turnOutput([search, erase])),
      agentEv.turn(1, [search, erase]),
      agentEv.toolRequested('ag#1/t1.0', search),
      agentEv.refused(1, erase, 'tool "erase" is not in node ag\'s tools', 'ag#1/t1.1'),
    ]);
    expect(s2.requests).toEqual([{ inv: 'ag#1/t1.0', node: 'ag', attempt: 1, kind: 'tool', name: 'search', input: { q: 'why' }, effect: 'unknown', authority }]);

    const s3 = t.activate(fact.completed('ag#1/t1.0', { hits: 3 }), t0 + 20);
    const messages2 = [userMessage, assistant([search, erase]), toolMessage(erase, { error: { code: 'agent.tool-refused', message: 'tool "erase" is not in node ag\'s tools' } }), toolMessage(search, { output: { hits: 3 } })];
    const t2 = turnRequest('ag#1/t2', 2, messages2);
    expectEvents(s3.events, [ev.completedCall('ag#1/t1.0', { hits: 3 }), agentEv.result(1, search, { hits: 3 }, 'ag#1/t1.0'), t2.event]);
    expect(s3.requests).toEqual([t2.request]);

    const answer = turnOutput([], 'because', { inputTokens: 20, outputTokens: 2 });
    const s4 = t.activate(fact.completed('ag#1/t2', answer), t0 + 30);
    expectEvents(s4.events, [
      ev.completedCall('ag#1/t2', answer),
      agentEv.turn(2, [], 'because', { inputTokens: 20, outputTokens: 2 }),
      ev.committed('ag', 'because'),
      ev.taken(1, 'ag', 'end'),
      ev.nodeStarted('end'),
      ev.committed('end', { answer: 'because' }),
      ev.runCompleted({ answer: 'because' }),
    ]);
    expect(s4.requests).toEqual([]);
    expect(s4.summary.usage).toEqual({ inputTokens: 30, outputTokens: 7, turns: 2, nodes: { ag: { inputTokens: 30, outputTokens: 7, turns: 2 } } });
  });

  it('a tool failure goes back to the model as a tool error, not a node failure', () => {
    const t = protocolRun(agentTemplate());
    t.start(question);
    t.activate(fact.completed('ag#1/t1', turnOutput([search])));
    const s = t.activate(fact.failed('ag#1/t1.0', { code: 'search.down', retryable: true }));
    const messages = [userMessage, assistant([search]), toolMessage(search, { error: { code: 'search.down', message: 'search.down happened' } })];
    const t2 = turnRequest('ag#1/t2', 2, messages);
    expectEvents(s.events, [
      ev.failedCall('ag#1/t1.0', { code: 'search.down', message: 'search.down happened', retryable: true }),
      { type: 'node.agent-tool-result', node: 'ag', attempt: 1, inv: 'ag#1/t1.0', payload: { turn: 1, toolCallId: 'c1', toolName: 'search', error: { code: 'search.down', message: 'search.down happened' } } },
      t2.event,
    ]);
    expect(s.requests).toEqual([t2.request]);
  });

  it('an authority narrowed between turns refuses the next tool call and leaves it out of the next turn', () => {
    const t = protocolRun(agentTemplate());
    t.start(question);
    t.activate(fact.completed('ag#1/t1', turnOutput([search])));
    t.activate(fact.completed('ag#1/t1.0', { hits: 1 }));
    // An operator command changes the authority while turn 2 is with the model.
    const narrowed = { id: 'reviewer', scopes: ['model:*', 'tool:search'] };
    expectEvents(t.activate(fact.resume({ authority: narrowed }), t0 + 50).events, [{ type: 'run.resumed', payload: { by: 'host', authority: narrowed } }]);
    const s = t.activate(fact.completed('ag#1/t2', turnOutput([charge, search])), t0 + 60);
    expectEvents(s.events, [
      ev.completedCall('ag#1/t2', turnOutput([charge, search])),
      agentEv.turn(2, [charge, search]),
      agentEv.refused(2, charge, 'authority reviewer does not grant tool:charge', 'ag#1/t2.0'),
      agentEv.toolRequested('ag#1/t2.1', search),
    ]);
    expect(s.requests.map((r) => r.inv)).toEqual(['ag#1/t2.1']);
    const s2 = t.activate(fact.completed('ag#1/t2.1', { hits: 2 }), t0 + 70);
    expect(s2.requests).toHaveLength(1);
    expect((s2.requests[0].input as { tools: string[] }).tools).toEqual(['search']);
    expect(s2.requests[0].authority).toEqual(narrowed);
  });

  it('a model turn the authority no longer grants is never requested: the node fails capability.denied', () => {
    const t = protocolRun(agentTemplate());
    t.start(question, { authority: { id: 'intern', scopes: ['tool:*'] } });
    const denied = { code: 'capability.denied', message: 'authority intern does not grant model:fake', retryable: false };
    expect(t.events().slice(5)).toEqual([ev.nodeStarted('ag'), ev.nodeFailed('ag', denied), ev.runFailed(nodeFailure('ag', denied))]);
  });

  it('an answer that fails outputSchema is sent back to the model; a later valid one is the output', () => {
    const schema = { type: 'object', required: ['score'], properties: { score: { type: 'integer' } } };
    const t = protocolRun(agentTemplate({ outputSchema: schema, tools: [], instructions: 'Score it.' }));
    t.start(question);
    const s = t.activate(fact.completed('ag#1/t1', turnOutput([], '{"score":"high"}')));
    const problem = 'the output does not match its schema: /score must be integer';
    const feedback = { role: 'user', content: `Your answer does not match the required output schema: ${problem}. Answer again with JSON text that matches it.` };
    const messages = [userMessage, assistant([], '{"score":"high"}'), feedback];
    const t2 = turnRequest('ag#1/t2', 2, messages, { tools: [], instructions: 'Score it.' });
    (t2.event.payload.input as Record<string, unknown>).outputSchemaDigest = expect.any(String);
    (t2.request.input as Record<string, unknown>).outputSchema = schema;
    expectEvents(s.events, [
      ev.completedCall('ag#1/t1', turnOutput([], '{"score":"high"}')),
      agentEv.turn(1, [], '{"score":"high"}'),
      { type: 'node.agent-answer-invalid', node: 'ag', attempt: 1, payload: { turn: 1, problem } },
      t2.event,
    ]);
    expect(s.requests).toEqual([t2.request]);
    const done = t.activate(fact.completed('ag#1/t2', turnOutput([], '{"score":7}')));
    expect(done.events.slice(2, 3)).toEqual([ev.committed('ag', { score: 7 })]);
    expect(done.summary.status).toBe('completed');
  });

  it('maxTurns ends the node with agent.max-turns; maxTokens with agent.max-tokens', () => {
    const turns = protocolRun(agentTemplate({ maxTurns: 1 }));
    turns.start(question);
    turns.activate(fact.completed('ag#1/t1', turnOutput([search])));
    const s = turns.activate(fact.completed('ag#1/t1.0', 'x'));
    const maxTurns = { code: 'agent.max-turns', message: 'node ag used its 1 model turns without a final answer', retryable: false };
    expectEvents(s.events, [ev.completedCall('ag#1/t1.0', 'x'), agentEv.result(1, search, 'x', 'ag#1/t1.0'), ev.nodeFailed('ag', maxTurns), ev.runFailed(nodeFailure('ag', maxTurns))]);
    expect(s.requests).toEqual([]);

    const tokens = protocolRun(agentTemplate({ maxTokens: 20 }));
    tokens.start(question);
    tokens.activate(fact.completed('ag#1/t1', turnOutput([search])));
    tokens.activate(fact.completed('ag#1/t1.0', 'x'));
    const s2 = tokens.activate(fact.completed('ag#1/t2', turnOutput([search], undefined, { inputTokens: 4, outputTokens: 2 })));
    const maxTokens = { code: 'agent.max-tokens', message: 'node ag used 21 tokens in 2 turns (at most 20)', retryable: false, detail: { inputTokens: 14, outputTokens: 7, turns: 2 } };
    expectEvents(s2.events, [
      ev.completedCall('ag#1/t2', turnOutput([search], undefined, { inputTokens: 4, outputTokens: 2 })),
      agentEv.turn(2, [search], undefined, { inputTokens: 4, outputTokens: 2 }),
      ev.nodeFailed('ag', maxTokens),
      ev.runFailed(nodeFailure('ag', maxTokens)),
    ]);
    expect(s2.requests).toEqual([]);
  });

  it('a conversation past its bound ends the node with agent.conversation-too-large before the next turn is asked', () => {
    const t = protocolRun(agentTemplate());
    t.start(question);
    t.activate(fact.completed('ag#1/t1', turnOutput([search])));
    const big = 'x'.repeat(4_194_304);
    const s = t.activate(fact.completed('ag#1/t1.0', big));
    const length = JSON.stringify([userMessage, assistant([search]), toolMessage(search, { output: big })]).length;
    const error = { code: 'agent.conversation-too-large', message: `node ag: the conversation has ${length} characters after 1 turns (at most 4194304)`, retryable: false };
    expectEvents(s.events, [ev.completedCall('ag#1/t1.0', big), agentEv.result(1, search, big, 'ag#1/t1.0'), ev.nodeFailed('ag', error), ev.runFailed(nodeFailure('ag', error))]);
    expect(s.requests).toEqual([]);
  });

  it('a model output that is not a turn fails the node with agent.model-output-invalid', () => {
    const t = protocolRun(agentTemplate());
    t.start(question);
    const s = t.activate(fact.completed('ag#1/t1', { text: 'hi' }));
    const error = { code: 'agent.model-output-invalid', message: 'node ag: "usage" must be { inputTokens, outputTokens } with non-negative integers', retryable: false };
    expectEvents(s.events, [ev.completedCall('ag#1/t1', { text: 'hi' }), ev.nodeFailed('ag', error), ev.runFailed(nodeFailure('ag', error))]);
  });
});

describe('recovery', () => {
  it('after a restart at turn 3 only turn 3 is asked again, with the conversation folded from the journal', () => {
    const t = protocolRun(agentTemplate());
    t.start(question);
    t.activate(fact.completed('ag#1/t1', turnOutput([{ ...search, effect: 'read-only' }])));
    t.activate(fact.completed('ag#1/t1.0', { hits: 1 }));
    t.activate(fact.completed('ag#1/t2', turnOutput([{ ...search, id: 'c9', effect: 'read-only' }])));
    const hot = t.activate(fact.completed('ag#1/t2.0', { hits: 2 }));
    t.restart();
    const s = t.activate(fact.restarted(), t0 + 100);
    const messages = [userMessage, assistant([search]), toolMessage(search, { output: { hits: 1 } }), assistant([{ ...search, id: 'c9' }]), toolMessage({ ...search, id: 'c9' }, { output: { hits: 2 } })];
    const t3 = turnRequest('ag#1/t3', 3, messages, { reissued: true });
    expectEvents(s.events, [{ type: 'run.resumed', payload: { by: 'host', afterRestart: true } }, t3.event]);
    expect(s.requests).toEqual([t3.request]);
    // The request is the one the hot run made, marked reissued.
    expect(hot.requests).toEqual([{ ...t3.request, reissued: undefined }].map(({ reissued: _r, ...r }) => r));
  });

  it('a tool call with an unknown effect in flight at a restart needs attention; an operator\'s answer goes to the model', () => {
    const t = protocolRun(agentTemplate());
    t.start(question);
    t.activate(fact.completed('ag#1/t1', turnOutput([charge, { ...search, effect: 'read-only' }])));
    t.restart();
    const s = t.activate(fact.restarted(), t0 + 100);
    const reason = 'the host restarted before the outcome was recorded; it is unknown whether the call took effect';
    expectEvents(s.events, [
      { type: 'run.resumed', payload: { by: 'host', afterRestart: true } },
      { type: 'capability.abandoned', node: 'ag', attempt: 1, inv: 'ag#1/t1.0', payload: { invocationId: 'ag#1/t1.0', reason } },
      { type: 'node.needs-attention', node: 'ag', attempt: 1, payload: { invocationId: 'ag#1/t1.0', evidence: { kind: 'tool', name: 'charge', effect: 'unknown', requestedSeq: 10 } } },
      agentEv.toolRequested('ag#1/t1.1', search, 'read-only', true),
      ev.paused('needs_attention'),
      ev.checkpoint(),
    ]);
    // The safe call settles while the run waits; no turn is asked for while one is unknown.
    const s2 = t.activate(fact.completed('ag#1/t1.1', { hits: 5 }));
    expectEvents(s2.events, [ev.completedCall('ag#1/t1.1', { hits: 5 }), agentEv.result(1, search, { hits: 5 }, 'ag#1/t1.1')]);
    expect(s2.requests).toEqual([]);

    const s3 = t.activate(fact.resolved('ag', 'succeeded', { output: { charged: true }, reason: 'the bank says so' }), t0 + 200);
    const messages = [userMessage, assistant([charge, search]), toolMessage(search, { output: { hits: 5 } }), toolMessage(charge, { output: { charged: true } })];
    const t2 = turnRequest('ag#1/t2', 2, messages);
    expectEvents(s3.events, [
      { type: 'node.resolved', node: 'ag', attempt: 1, payload: { resolution: 'succeeded', by: 'operator:bob', reason: 'the bank says so', output: { charged: true } } },
      { type: 'node.agent-tool-result', node: 'ag', attempt: 1, inv: 'ag#1/t1.0', payload: { turn: 1, toolCallId: 'c3', toolName: 'charge', output: { charged: true } } },
      { type: 'node.resumed', node: 'ag', attempt: 1, payload: { reason: 'every unknown tool call was resolved' } },
      t2.event,
      { type: 'run.resumed', payload: { reason: 'work resumed' } },
    ]);
    expect(s3.requests).toEqual([t2.request]);
  });

  it('an operator\'s retry asks the unknown tool call again; under a narrowed authority it is refused and the loop goes on', () => {
    const unknownCharge = () => {
      const t = protocolRun(agentTemplate());
      t.start(question);
      t.activate(fact.completed('ag#1/t1', turnOutput([charge])));
      t.restart();
      expect(t.activate(fact.restarted(), t0 + 100).summary.status).toBe('paused');
      return t;
    };
    const t = unknownCharge();
    const s = t.activate(fact.resolved('ag', 'retry'), t0 + 200);
    expectEvents(s.events, [
      { type: 'node.resolved', node: 'ag', attempt: 1, payload: { resolution: 'retry', by: 'operator:bob' } },
      { type: 'node.resumed', node: 'ag', attempt: 1, payload: { reason: 'every unknown tool call was resolved' } },
      agentEv.toolRequested('ag#1/t1.0', charge, 'unknown', true),
      { type: 'run.resumed', payload: { reason: 'work resumed' } },
    ]);
    expect(s.requests).toEqual([{ inv: 'ag#1/t1.0', node: 'ag', attempt: 1, kind: 'tool', name: 'charge', input: { cents: 100 }, effect: 'unknown', reissued: true, authority }]);

    const u = unknownCharge();
    const narrowed = { id: 'reviewer', scopes: ['model:*', 'tool:search'] };
    u.activate(fact.resume({ authority: narrowed }), t0 + 150);
    const s2 = u.activate(fact.resolved('ag', 'retry'), t0 + 200);
    const refusal = { code: 'agent.tool-refused', message: 'authority reviewer does not grant tool:charge' };
    const t2 = turnRequest('ag#1/t2', 2, [userMessage, assistant([charge]), toolMessage(charge, { error: refusal })], { tools: ['search'], authority: narrowed });
    expectEvents(s2.events, [
      { type: 'node.resolved', node: 'ag', attempt: 1, payload: { resolution: 'retry', by: 'operator:bob' } },
      { type: 'node.resumed', node: 'ag', attempt: 1, payload: { reason: 'every unknown tool call was resolved' } },
      agentEv.refused(1, charge, refusal.message, 'ag#1/t1.0'),
      t2.event,
      { type: 'run.resumed', payload: { reason: 'work resumed' } },
    ]);
    expect(s2.requests).toEqual([t2.request]);

    const v = unknownCharge();
    // Cold: the engine rebuilds the run from the checkpoint its pause committed and the events after it.
    v.restart();
    const s3 = v.activate(fact.resolved('ag', 'fail', { reason: 'the bank has no record' }), t0 + 200);
    const failed = { code: 'node.resolved-failed', message: 'operator:bob marked ag failed: the bank has no record' };
    const t2v = turnRequest('ag#1/t2', 2, [userMessage, assistant([charge]), toolMessage(charge, { error: failed })]);
    expectEvents(s3.events, [
      { type: 'node.resolved', node: 'ag', attempt: 1, payload: { resolution: 'fail', by: 'operator:bob', reason: 'the bank has no record' } },
      { type: 'node.agent-tool-result', node: 'ag', attempt: 1, inv: 'ag#1/t1.0', payload: { turn: 1, toolCallId: 'c3', toolName: 'charge', error: failed } },
      { type: 'node.resumed', node: 'ag', attempt: 1, payload: { reason: 'every unknown tool call was resolved' } },
      t2v.event,
      { type: 'run.resumed', payload: { reason: 'work resumed' } },
    ]);
  });
});

// Recorded replay of an agent loop: it calls no model and no tool (every outcome comes from the
// journal) and reproduces every turn; its twin, with one turn's recorded output altered, must
// diverge. Counterfactual replay of an edited template shows the first divergence.
import { describe, expect, it } from 'vitest';
import { fact, protocolRun, type Obj } from '../protocol/harness.js';
import { agentTemplate, question, turnOutput, type Call } from './agent-builders.js';

const search: Call = { id: 'c1', name: 'search', input: { q: 'why' } };
const charge: Call = { id: 'c2', name: 'charge', input: { cents: 100 } };

/** A finished 3-turn run: search, then charge, then the answer. */
function finishedRun(template = agentTemplate()) {
  const t = protocolRun(template);
  t.start(question);
  t.activate(fact.completed('ag#1/t1', turnOutput([search])));
  t.activate(fact.completed('ag#1/t1.0', { hits: 3 }));
  t.activate(fact.completed('ag#1/t2', turnOutput([charge])));
  t.activate(fact.completed('ag#1/t2.0', { charged: true }));
  const last = t.activate(fact.completed('ag#1/t3', turnOutput([], 'done', { inputTokens: 30, outputTokens: 1 })));
  expect(last.summary.status).toBe('completed');
  return t;
}

describe('recorded replay of an agent loop', () => {
  it('reproduces every turn without a gateway: identical, no capability left unrecorded', () => {
    const t = finishedRun();
    const report = t.replay();
    expect(report).toMatchObject({ identical: true, firstDivergence: null, unrecordedCapabilities: [], skippedFacts: [], changedNodes: [] });
    expect(report.eventsReplayed).toBe(report.eventsRecorded);
    expect(report.replayedOutcome).toEqual({ status: 'completed', output: { answer: 'done' } });
  });

  it('twin: a turn whose recorded output was altered diverges at that turn', () => {
    const t = finishedRun();
    const lines = t.journalLines();
    const at = lines.findIndex((l) => l.includes('"type":"capability.completed"') && l.includes('"charge"'));
    expect(at).toBeGreaterThan(0);
    const altered = lines.map((l, i) => (i === at ? l.replace('"name":"charge"', '"name":"refund"') : l));
    const report = t.replay(undefined, altered);
    expect(report.identical).toBe(false);
    const divergence = report.firstDivergence as { seq: number; recorded: Obj; replayed: Obj };
    expect(divergence.seq).toBe(at + 2);
    expect(divergence.recorded).toMatchObject({ type: 'node.agent-turn', payload: { turn: 2, message: { toolCalls: [{ name: 'charge' }] } } });
    expect(divergence.replayed).toMatchObject({ type: 'node.agent-turn', payload: { turn: 2, message: { toolCalls: [{ name: 'refund' }] } } });
  });
});

describe('counterfactual replay of an edited template', () => {
  it('changed instructions: the first model request differs', () => {
    const t = finishedRun();
    const report = t.replay(agentTemplate({ instructions: 'Be thorough.' }));
    expect(report.edited).toBe(true);
    const divergence = report.firstDivergence as { nodeId: string; recorded: Obj; replayed: Obj };
    expect(divergence.nodeId).toBe('ag');
    expect(divergence.recorded).toMatchObject({ type: 'capability.requested', payload: { kind: 'model', input: { turn: 1 } } });
    expect((divergence.recorded.payload as Obj).input).not.toEqual((divergence.replayed.payload as Obj).input);
    // The rest of the run replays on the recorded answers: the same outcome.
    expect(report.replayedOutcome).toEqual({ status: 'completed', output: { answer: 'done' } });
  });

  it('a removed tool: the model is no longer offered it, and its recorded call is refused, never replayed', () => {
    const t = finishedRun();
    const edited = agentTemplate({ tools: ['search'] });
    const report = t.replay(edited);
    const divergence = report.firstDivergence as { recorded: Obj; replayed: Obj };
    expect((divergence.recorded.payload as { input: Obj }).input.tools).toEqual(['search', 'charge']);
    expect((divergence.replayed.payload as { input: Obj }).input.tools).toEqual(['search']);
    // The recorded charge never reaches a gateway in the edited run: its outcome is skipped.
    expect(report.skippedFacts).toEqual([{ invocationId: expect.any(String), reason: 'the edited plan never requested it' }]);
    expect(report.unrecordedCapabilities).toEqual([]);
  });
});

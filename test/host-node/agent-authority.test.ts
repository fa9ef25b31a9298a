// An agent loop on the Node host whose authority is narrowed between two turns by an operator
// command (the approval of another branch, which resolves the run's authority again): the next
// tool call the model asks for is refused, goes back to the model as a tool error, and never
// reaches the tool; the next turn no longer offers it.
import { describe, expect, it } from 'vitest';
import { openRuntime } from '../helpers/node-host.js';

const template = {
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: 'agent-authority' },
  spec: {
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'agent', uses: 'agent.run@1', config: { model: 'stepper', tools: ['lookup', 'pay'], maxTurns: 5 } },
      { id: 'gate', uses: 'human.approval@1', config: { prompt: 'Go on?' } },
      { id: 'end', uses: 'core.end@1', inputs: { answer: { source: 'output', nodeId: 'agent' } } },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'start', to: 'gate' },
      { from: 'agent', to: 'end' },
      { from: 'gate', to: 'end' },
    ],
    requires: ['model:stepper', 'tool:lookup', 'tool:pay', 'approval'],
  },
};

describe('an agent loop under an authority narrowed between turns', () => {
  it('refuses the next tool call after an approval resolved a narrower authority', async () => {
    let scopes = ['model:*', 'tool:*', 'approval'];
    const paid: unknown[] = [];
    const requests: { turn: number; tools: string[] }[] = [];
    let turn2Asked!: () => void;
    const turn2 = new Promise<void>((r) => (turn2Asked = r));
    let releaseTurn2!: () => void;
    const released = new Promise<void>((r) => (releaseTurn2 = r));
    const rt = await openRuntime({
      authorities: () => ({ id: 'team-a', scopes }),
      tools: { lookup: { readOnly: true, execute: () => ({ balance: 12 }) }, pay: (input: unknown) => paid.push(input) },
      models: {
        stepper: {
          async generate(request) {
            requests.push({ turn: request.turn, tools: request.tools.map((t) => t.name) });
            const usage = { inputTokens: 1, outputTokens: 1 };
            if (request.turn === 1) return { toolCalls: [{ id: 'a', name: 'lookup', input: {} }], usage, finishReason: 'tool-calls' };
            if (request.turn === 2) {
              turn2Asked();
              await released;
              return { toolCalls: [{ id: 'b', name: 'pay', input: { cents: 500 } }], usage, finishReason: 'tool-calls' };
            }
            const last = request.messages[request.messages.length - 1];
            return { text: JSON.stringify(last), toolCalls: [], usage, finishReason: 'stop' };
          },
        },
      },
    });
    try {
      const handle = await rt.launch({ type: 'inline', template }, { input: {} });
      await turn2;
      // While turn 2 is with the model, an operator approves the other branch; the authority is
      // resolved again for that command, without `tool:pay`.
      scopes = ['model:*', 'tool:lookup', 'approval'];
      await rt.approve(handle.runId, 'gate', { by: 'alice' });
      releaseTurn2();
      const outcome = await handle.settled();
      expect(outcome.status).toBe('completed');
      expect(paid).toEqual([]);
      expect(requests).toEqual([
        { turn: 1, tools: ['lookup', 'pay'] },
        { turn: 2, tools: ['lookup', 'pay'] },
        { turn: 3, tools: ['lookup'] },
      ]);
      const refused = { role: 'tool', toolCallId: 'b', toolName: 'pay', error: { code: 'agent.tool-refused', message: 'authority team-a does not grant tool:pay' } };
      expect(JSON.parse((outcome.output as { answer: string }).answer)).toEqual(refused);
      const events = (await rt.readEvents(handle.runId, { limit: 1000 })).events as { type: string; payload: { kind?: string; name?: string } }[];
      expect(events.filter((e) => e.type === 'capability.requested' && e.payload.kind === 'tool').map((e) => e.payload.name)).toEqual(['lookup']);
    } finally {
      await rt.close();
    }
  });
});

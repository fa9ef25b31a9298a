// The agent loop the agent crash test kills: a scripted model of 5 turns (turns 1-4 each ask for
// one `charge`, turn 5 answers), implemented as a ModelDefinition that appends every request it
// gets to model.log, and a `charge` tool with an unknown effect that appends every execution to
// effects.log. Both logs are the oracle: what the host really asked for and really did.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const runId = 'agent-run-1';
export const input = { order: 'o-17' };

export const template = {
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: 'agent-crash' },
  spec: {
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'agent', uses: 'agent.run@1', config: { model: 'scripted', instructions: 'Charge four times, then report.', tools: ['charge'], maxTurns: 6 }, inputs: { order: { source: 'input', path: '/order' } } },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [
      { from: 'start', to: 'agent' },
      { from: 'agent', to: 'end' },
    ],
    requires: ['model:scripted', 'tool:charge'],
    outputs: { report: { source: 'output', nodeId: 'agent' } },
  },
};

export const chargeOutput = (call) => ({ charged: call.n, receipt: `r-${call.n}` });

function lines(file) {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
}

export const readModelLog = (dir) => lines(join(dir, 'model.log'));
export const readEffectsLog = (dir) => lines(join(dir, 'effects.log'));

/** The registry members of the fixture: the model and the tool, logging into `dir`. */
export function agentRegistry(dir) {
  return {
    tools: {
      charge: {
        description: 'Charges the order once more',
        execute(call, ctx) {
          appendFileSync(join(dir, 'effects.log'), `${JSON.stringify({ invocationId: ctx.invocationId, n: call.n })}\n`);
          return chargeOutput(call);
        },
      },
    },
    models: {
      scripted: {
        generate(request, ctx) {
          appendFileSync(join(dir, 'model.log'), `${JSON.stringify({ invocationId: ctx.invocationId, turn: request.turn, messagesDigest: request.messagesDigest })}\n`);
          const charges = request.messages.filter((m) => m.role === 'tool' && m.toolName === 'charge' && m.output).length;
          const usage = { inputTokens: 100 + 10 * request.turn, outputTokens: 7 };
          if (request.turn <= 4) return { text: `charge ${request.turn}`, toolCalls: [{ id: `t${request.turn}`, name: 'charge', input: { n: request.turn } }], usage, finishReason: 'tool-calls' };
          return { text: `charged ${charges} times`, toolCalls: [], usage, finishReason: 'stop' };
        },
      },
    },
  };
}

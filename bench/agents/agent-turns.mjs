// Agent turn overhead: N runs of a two-turn agent (one tool call, then the answer) with the same
// fake model, on this product (agent.run@1, SQLite store) and on LangGraph's prebuilt ReAct agent
// with its SQLite checkpointer (from bench/peers, when installed). Prints a table; never fails.
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';

const RUNS = Number(process.env.AGENT_BENCH_RUNS ?? 50);
const usage = { inputTokens: 1, outputTokens: 1 };
const template = {
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: 'bench-agent' },
  spec: {
    nodes: [{ id: 'start', uses: 'core.start@1' }, { id: 'agent', uses: 'agent.run@1', config: { model: 'fake', tools: ['lookup'], maxTurns: 3 } }, { id: 'end', uses: 'core.end@1', inputs: { a: { source: 'output', nodeId: 'agent' } } }],
    edges: [{ from: 'start', to: 'agent' }, { from: 'agent', to: 'end' }],
    requires: ['model:fake', 'tool:lookup'],
  },
};

async function ours() {
  const rt = await WorkflowRuntime.open({
    dir: mkdtempSync(join(tmpdir(), 'bench-agent-')),
    log: () => undefined,
    tools: { lookup: { readOnly: true, execute: () => ({ value: 42 }) } },
    models: { fake: { generate: (r) => (r.turn === 1 ? { toolCalls: [{ id: 'c1', name: 'lookup', input: { q: 'x' } }], usage, finishReason: 'tool-calls' } : { text: 'done', toolCalls: [], usage, finishReason: 'stop' }) } },
  });
  try {
    const start = performance.now();
    for (let i = 0; i < RUNS; i++) {
      const outcome = await (await rt.launch({ type: 'inline', template }, { input: `q${i}` })).settled();
      if (outcome.status !== 'completed') throw new Error(`run ${i} ${outcome.status}`);
    }
    return performance.now() - start;
  } finally {
    await rt.close();
  }
}

async function langgraph() {
  const require = createRequire(new URL('../peers/package.json', import.meta.url));
  const { createReactAgent } = await import(require.resolve('@langchain/langgraph/prebuilt'));
  const { SqliteSaver } = await import(require.resolve('@langchain/langgraph-checkpoint-sqlite'));
  const { BaseChatModel } = await import(require.resolve('@langchain/core/language_models/chat_models'));
  const { AIMessage } = await import(require.resolve('@langchain/core/messages'));
  const { tool } = await import(require.resolve('@langchain/core/tools'));
  class FakeModel extends BaseChatModel {
    _llmType() { return 'fake'; }
    bindTools() { return this; }
    async _generate(messages) {
      const last = messages[messages.length - 1];
      const message = last._getType() === 'tool' ? new AIMessage({ content: 'done' }) : new AIMessage({ content: '', tool_calls: [{ id: 'c1', name: 'lookup', args: { q: 'x' } }] });
      return { generations: [{ text: String(message.content), message }] };
    }
  }
  const lookup = tool(async () => JSON.stringify({ value: 42 }), { name: 'lookup', description: 'lookup', schema: { type: 'object', properties: { q: { type: 'string' } } } });
  const saver = SqliteSaver.fromConnString(join(mkdtempSync(join(tmpdir(), 'bench-lg-')), 'cp.db'));
  const agent = createReactAgent({ llm: new FakeModel({}), tools: [lookup], checkpointSaver: saver });
  const start = performance.now();
  for (let i = 0; i < RUNS; i++) await agent.invoke({ messages: [{ role: 'user', content: `q${i}` }] }, { configurable: { thread_id: `t${i}` } });
  return performance.now() - start;
}

const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const rows = [];
for (const [name, fn] of [['agent-dag-workflow agent.run@1 (SQLite)', ours], ['LangGraph createReactAgent (SqliteSaver)', langgraph]]) {
  try {
    const ms = await fn();
    rows.push([name, RUNS, ms.toFixed(0), (ms / RUNS).toFixed(2), ((ms / RUNS) / 2).toFixed(2)]);
  } catch (error) {
    rows.push([name, RUNS, 'skipped', String(error.message).slice(0, 60), '']);
  }
}
console.log(`agent turn overhead, ${RUNS} runs x 2 turns, loadavg at end: ${load()}`);
console.log('| system | runs | total ms | ms/run | ms/turn |\n|---|---|---|---|---|');
for (const row of rows) console.log(`| ${row.join(' | ')} |`);

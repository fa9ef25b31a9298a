// The research agent: an agent.run@1 node whose model looks a term up in an MCP glossary server and
// answers. Offline by default on a deterministic mock model; with OPENAI_API_KEY set, the same
// template and tools run on OpenAI (OPENAI_MODEL, default gpt-4o-mini).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowRuntime } from '@gm-hz/agent-dag-workflow';
import { aiSdkModel } from '@gm-hz/agent-dag-workflow/ai';
import { mcpTools } from '@gm-hz/agent-dag-workflow/mcp-client';

const term = process.argv[2] ?? 'dag';
const template = {
  apiVersion: 'workflow.gm-hz.dev/v1alpha1',
  kind: 'WorkflowTemplate',
  metadata: { id: 'agent-research' },
  spec: {
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'research', uses: 'agent.run@1', config: { model: 'researcher', instructions: 'Look the term up in the glossary, then explain it in one sentence.', tools: ['glossary.define'], skills: ['plain-words'], maxTurns: 4 } },
      { id: 'end', uses: 'core.end@1', inputs: { answer: { source: 'output', nodeId: 'research' } } },
    ],
    edges: [{ from: 'start', to: 'research' }, { from: 'research', to: 'end' }],
    requires: ['model:researcher', 'tool:glossary.define', 'skill:plain-words'],
  },
};

async function languageModel() {
  if (process.env.OPENAI_API_KEY) {
    const { createOpenAI } = await import('@ai-sdk/openai');
    return createOpenAI({ apiKey: process.env.OPENAI_API_KEY }).chat(process.env.OPENAI_MODEL ?? 'gpt-4o-mini');
  }
  // Offline: turn 1 asks for the definition, turn 2 answers with what the tool returned.
  const { MockLanguageModelV3, convertArrayToReadableStream } = await import('ai/test');
  const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 8, text: 8, reasoning: 0 } };
  return new MockLanguageModelV3({
    doStream: async ({ prompt }) => {
      const result = prompt.flatMap((m) => (m.role === 'tool' ? m.content : [])).at(-1);
      const parts = result
        ? [{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: `${term}: ` }, { type: 'text-delta', id: 't', delta: String(result.output.value) }, { type: 'text-end', id: 't' }, { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage }]
        : [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'glossary_define', input: JSON.stringify({ term }) }, { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage }];
      return { stream: convertArrayToReadableStream([{ type: 'stream-start', warnings: [] }, ...parts]) };
    },
  });
}

const mcp = await mcpTools({ servers: [{ name: 'glossary', transport: { command: process.execPath, args: [fileURLToPath(new URL('glossary-server.mjs', import.meta.url))] }, allow: ['define'] }] });
const runtime = await WorkflowRuntime.open({
  dir: mkdtempSync(join(tmpdir(), 'agent-research-')),
  log: () => undefined,
  tools: mcp.tools,
  models: { researcher: aiSdkModel(await languageModel(), { temperature: 0 }) },
  skills: (name) => (name === 'plain-words' ? { text: 'Use short, plain words.' } : undefined),
});
try {
  const handle = await runtime.launch({ type: 'inline', template }, { input: `What is "${term}"?` });
  const outcome = await handle.settled();
  console.log(JSON.stringify({ status: outcome.status, output: outcome.output }, null, 2));
  if (outcome.status !== 'completed') process.exitCode = 1;
} finally {
  await runtime.close();
  await mcp.close();
}

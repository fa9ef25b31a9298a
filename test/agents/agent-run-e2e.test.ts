// An agent.run@1 node end to end on the Node host (SQLite store in a temp dir): its model is the
// AI SDK adapter over the SDK's mock language model, its tools an MCP server process over stdio
// with an allow-list, its skill resolved by the host. The server's log is the oracle of the calls.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MockLanguageModelV3, convertArrayToReadableStream } from 'ai/test';
import { aiSdkModel } from '../../hosts/node/agents/ai-sdk-model.js';
import { mcpTools } from '../../hosts/node/agents/mcp-tools.js';
import { chain, openRuntime } from '../helpers/node-host.js';

const server = fileURLToPath(new URL('../fixtures/mcp-log-server.mjs', import.meta.url));
const usage = { inputTokens: { total: 5, noCache: 5, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 2, text: 2, reasoning: 0 } };
const finish = (unified: string) => ({ type: 'finish', finishReason: { unified, raw: unified }, usage });

describe('agent.run@1 with aiSdkModel and mcpTools through WorkflowRuntime', () => {
  it('calls the allowed MCP tool, refuses the other, and completes with the model answer', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'mcp-log-')), 'calls.log');
    const mcp = await mcpTools({ servers: [{ name: 'notes', transport: { command: process.execPath, args: [server, log] }, allow: ['lookup', 'save'] }] });
    const prompts: any[] = [];
    const turns = [
      [{ type: 'stream-start', warnings: [] }, { type: 'tool-call', toolCallId: 'c1', toolName: 'notes_lookup', input: '{"word":"dag"}' }, { type: 'tool-call', toolCallId: 'c2', toolName: 'notes_save', input: '{"note":"x"}' }, finish('tool-calls')],
      [{ type: 'stream-start', warnings: [] }, { type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'done' }, { type: 'text-end', id: 't' }, finish('stop')],
    ];
    const mock = new MockLanguageModelV3({
      doStream: async (options) => {
        prompts.push(options.prompt);
        return { stream: convertArrayToReadableStream(turns[prompts.length - 1] as never[]) };
      },
    });
    const rt = await openRuntime({ tools: mcp.tools, models: { mock: aiSdkModel(mock) }, skills: (name) => (name === 'terse' ? { text: 'Answer in one word.' } : undefined) });
    try {
      const template = chain('agent-e2e', [{ id: 'agent', uses: 'agent.run@1', config: { model: 'mock', instructions: 'Research.', tools: ['notes.lookup'], skills: ['terse'], maxTurns: 3 } }], { requires: ['model:mock', 'tool:notes.lookup', 'skill:terse'] });
      template.spec.nodes[2].inputs = { answer: { source: 'output', nodeId: 'agent' } };
      const handle = await rt.launch({ type: 'inline', template }, { input: 'What is a DAG?' });
      const outcome = await handle.settled();
      expect({ status: outcome.status, output: outcome.output }).toEqual({ status: 'completed', output: { answer: 'done' } });
      expect(readFileSync(log, 'utf8')).toBe(JSON.stringify({ tool: 'lookup', word: 'dag' }) + '\n');
      expect(prompts[0][0]).toEqual({ role: 'system', content: 'Research.\n\n## Skill: terse\nAnswer in one word.' });
      const results = prompts[1].filter((m: any) => m.role === 'tool').flatMap((m: any) => m.content);
      expect(results.map((r: any) => [r.toolName, r.output.type])).toEqual([
        ['notes_save', 'error-text'],
        ['notes_lookup', 'json'],
      ]);
      expect(results[0].output.value).toMatch(/^agent\.tool-refused: /);
      expect(results[1].output.value).toBe('definition of dag');
    } finally {
      await rt.close();
      await mcp.close();
    }
  });
});

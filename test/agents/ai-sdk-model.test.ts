import { describe, expect, it } from 'vitest';
import { MockLanguageModelV3, convertArrayToReadableStream } from 'ai/test';
import { aiSdkModel } from '../../hosts/node/agents/ai-sdk-model.js';
import type { ToolContext } from '../../hosts/core/gateway-registry.js';
import type { ModelRequest } from '../../hosts/core/model-gateway.js';

const usage = (input: number, output: number) => ({ inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: output, text: output, reasoning: 0 } });

function scripted(turns: unknown[][]) {
  const prompts: unknown[] = [];
  const toolsSeen: unknown[] = [];
  let n = 0;
  const model = new MockLanguageModelV3({
    doStream: async (options) => {
      prompts.push(options.prompt);
      toolsSeen.push(options.tools);
      return { stream: convertArrayToReadableStream(turns[n++] as never[]) };
    },
  });
  return { model, prompts, toolsSeen };
}

describe('aiSdkModel with the AI SDK mock language model', () => {
  it('makes one step per turn: declares the tools, returns tool calls unexecuted, maps the conversation, streams deltas to progress', async () => {
    const { model, prompts, toolsSeen } = scripted([
      [
        { type: 'stream-start', warnings: [] },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'notes_lookup', input: '{"word":"dag"}' },
        { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(10, 4) },
      ],
      [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: 'A DAG ' },
        { type: 'text-delta', id: 't', delta: 'is acyclic.' },
        { type: 'text-end', id: 't' },
        { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(20, 5) },
      ],
    ]);
    const definition = aiSdkModel(model);
    const progress: unknown[] = [];
    const context = { runId: 'r', nodeId: 'n', attempt: 1, progress: (data: unknown) => progress.push(data) } as unknown as ToolContext;
    const tools = [{ name: 'notes.lookup', description: 'Looks a word up', inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] } }];
    const first: ModelRequest = { turn: 1, instructions: 'Be brief.', skillTexts: [{ name: 'style', text: 'Use plain words.' }], tools, messages: [{ role: 'user', content: 'What is a DAG?' }], messagesDigest: 'd1' };
    expect(await definition.generate(first, context)).toEqual({ toolCalls: [{ id: 'c1', name: 'notes.lookup', input: { word: 'dag' } }], usage: { inputTokens: 10, outputTokens: 4 }, finishReason: 'tool-calls' });
    expect(toolsSeen[0]).toEqual([{ type: 'function', name: 'notes_lookup', description: 'Looks a word up', inputSchema: tools[0]!.inputSchema }]);
    expect(prompts[0]).toEqual([
      { role: 'system', content: 'Be brief.\n\n## Skill: style\nUse plain words.' },
      { role: 'user', content: [{ type: 'text', text: 'What is a DAG?' }] },
    ]);
    const second: ModelRequest = {
      ...first,
      turn: 2,
      messages: [
        { role: 'user', content: 'What is a DAG?' },
        { role: 'assistant', toolCalls: [{ id: 'c1', name: 'notes.lookup', input: { word: 'dag' } }] },
        { role: 'tool', toolCallId: 'c1', toolName: 'notes.lookup', output: 'directed acyclic graph' },
      ],
    };
    expect(await definition.generate(second, context)).toEqual({ text: 'A DAG is acyclic.', toolCalls: [], usage: { inputTokens: 20, outputTokens: 5 }, finishReason: 'stop' });
    expect((prompts[1] as unknown[]).slice(2)).toEqual([
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'notes_lookup', input: { word: 'dag' } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'notes_lookup', output: { type: 'json', value: 'directed acyclic graph' } }] },
    ]);
    expect(progress).toEqual([{ type: 'text-delta', text: 'A DAG ' }, { type: 'text-delta', text: 'is acyclic.' }]);
  });
});

// A model turn of an agent loop made by the Vercel AI SDK, so any provider behind a `LanguageModel`
// serves as an agent's model. The SDK makes exactly one step with the allowed tools declared and no
// `execute`: it never runs a tool itself, the engine does (each call journaled, checked against the
// node's allow-list). `ai` is an optional peer dependency, imported only when a turn is generated.
import type { Json, ModelTurnOutput, AgentMessage } from '../../../engine/protocol/agent-host.js';
import type { ToolContext } from '../../core/gateway-registry.js';
import type { ModelDefinition, ModelRequest } from '../../core/model-gateway.js';

export interface AiSdkModelOptions {
  /** Sampling temperature handed to the provider. */
  temperature?: number;
  /** Output token cap of one turn. */
  maxOutputTokens?: number;
  /** Stream text deltas to the run's live view (default true). */
  stream?: boolean;
}

/** The AI SDK is not installed: `npm install ai`. */
export class AiSdkMissingError extends Error {
  readonly code = 'model.ai-sdk-missing';
  readonly retryable = false;
}

const finishReasons = new Set(['stop', 'tool-calls', 'length', 'content-filter', 'error', 'other']);

export function aiSdkModel(model: unknown, options: AiSdkModelOptions = {}): ModelDefinition {
  return {
    async generate(request: ModelRequest, context: ToolContext): Promise<ModelTurnOutput> {
      const ai = await loadAiSdk();
      const names = providerNames(request.tools.map((tool) => tool.name));
      const tools: Record<string, unknown> = {};
      for (const spec of request.tools) {
        const schema = (spec.inputSchema ?? { type: 'object', properties: {} }) as Parameters<typeof ai.jsonSchema>[0];
        tools[names.toProvider.get(spec.name)!] = ai.tool({ ...(spec.description !== undefined ? { description: spec.description } : {}), inputSchema: ai.jsonSchema(schema) } as Parameters<typeof ai.tool>[0]);
      }
      const result = ai.streamText({
        model: model as Parameters<typeof ai.streamText>[0]['model'],
        ...(systemText(request) !== undefined ? { system: systemText(request)! } : {}),
        messages: toModelMessages(request.messages, names.toProvider),
        tools: tools as Parameters<typeof ai.streamText>[0]['tools'],
        stopWhen: ai.stepCountIs(1),
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
        ...(options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {}),
      });
      let streamError: unknown;
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta' && options.stream !== false) context.progress?.({ type: 'text-delta', text: part.text });
        if (part.type === 'error') streamError = part.error;
      }
      if (streamError !== undefined) throw streamError;
      const [text, calls, usage, finishReason] = await Promise.all([result.text, result.toolCalls, result.usage, result.finishReason]);
      const output: ModelTurnOutput = {
        toolCalls: calls.map((call) => ({ id: call.toolCallId, name: names.fromProvider.get(call.toolName) ?? call.toolName, input: (call.input ?? {}) as Json })),
        usage: { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0 },
        finishReason: (finishReasons.has(finishReason) ? finishReason : 'other') as ModelTurnOutput['finishReason'],
      };
      if (text !== '') output.text = text;
      return output;
    },
  };
}

async function loadAiSdk() {
  try {
    return await import('ai');
  } catch (error) {
    throw new AiSdkMissingError(`aiSdkModel needs the Vercel AI SDK: npm install ai (${(error as Error).message})`);
  }
}

/** Instructions, then each skill's text, then the answer's schema: the turn's system prompt. */
export function systemText(request: ModelRequest): string | undefined {
  const parts: string[] = [];
  if (request.instructions) parts.push(request.instructions);
  for (const skill of request.skillTexts ?? []) parts.push(`## Skill: ${skill.name}\n${skill.text}`);
  if (request.outputSchema !== undefined) parts.push(`Answer with JSON only, valid against this JSON Schema:\n${JSON.stringify(request.outputSchema)}`);
  return parts.length > 0 ? parts.join('\n\n') : undefined;
}

/**
 * Providers accept only [A-Za-z0-9_-] in a tool's name (OpenAI, Anthropic); a registry's name such
 * as `notes.lookup` is sent as `notes_lookup` and mapped back, a clash getting a numeric suffix.
 */
export function providerNames(names: string[]) {
  const toProvider = new Map<string, string>();
  const fromProvider = new Map<string, string>();
  for (const name of names) {
    const base = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 60) || 'tool';
    let alias = base;
    for (let n = 2; fromProvider.has(alias); n++) alias = `${base}_${n}`;
    toProvider.set(name, alias);
    fromProvider.set(alias, name);
  }
  return { toProvider, fromProvider };
}

/** The engine's conversation in the AI SDK's ModelMessage shape. */
export function toModelMessages(messages: AgentMessage[], toProvider: Map<string, string>) {
  const alias = (name: string) => toProvider.get(name) ?? name.replace(/[^A-Za-z0-9_-]/g, '_');
  return messages.map((message) => {
    if (message.role === 'user') return { role: 'user' as const, content: message.content };
    if (message.role === 'assistant') {
      const content: Array<{ type: 'text'; text: string } | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }> = [];
      if (message.text) content.push({ type: 'text', text: message.text });
      for (const call of message.toolCalls ?? []) content.push({ type: 'tool-call', toolCallId: call.id, toolName: alias(call.name), input: call.input });
      return { role: 'assistant' as const, content };
    }
    const output = message.error ? { type: 'error-text' as const, value: `${message.error.code}: ${message.error.message}` } : { type: 'json' as const, value: (message.output ?? null) as Json };
    return { role: 'tool' as const, content: [{ type: 'tool-result' as const, toolCallId: message.toolCallId, toolName: alias(message.toolName), output }] };
  });
}

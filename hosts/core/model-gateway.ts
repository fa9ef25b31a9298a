// How the gateway registry carries out a model turn of an agent loop (engine/protocol/agent.ts):
// the turn's allowed tool names become the tools' specs, skill names become their texts through
// the host's skill resolver, the model generates, and each tool call it asks for is annotated
// with the effect class of the tool's definition, which the engine journals with the call and
// recovery decides on.
import type { Json, ModelTurnInput, ModelTurnOutput } from '../../engine/protocol/agent-host.js';
import type { ToolContext, ToolDefinition } from './gateway-registry.js';

/** What a model sees of one tool. */
export interface ToolSpec {
  name: string;
  description?: string;
  inputSchema?: Json;
}

/** A model turn as a model sees it: the allowed tools as specs, the skills as their texts. */
export type ModelRequest = Omit<ModelTurnInput, 'tools'> & { tools: ToolSpec[]; skillTexts?: { name: string; text: string }[] };

/** One model behind a `model` reference (an agent's `config.model`). */
export interface ModelDefinition {
  generate(input: ModelRequest, context: ToolContext): Promise<ModelTurnOutput> | ModelTurnOutput;
}

/** Turns a skill name into the text handed to the model; undefined when it knows no such skill. */
export type SkillResolver = (name: string) => Promise<{ text: string } | undefined> | { text: string } | undefined;

/** A turn the host cannot ask for (a skill it cannot resolve); its `code` becomes the outcome's. */
export class ModelTurnError extends Error {
  readonly retryable = false;
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function generateTurn(model: ModelDefinition, input: ModelTurnInput, tools: ReadonlyMap<string, ToolDefinition>, skills: SkillResolver | undefined, context: ToolContext): Promise<ModelTurnOutput> {
  const specs: ToolSpec[] = input.tools.map((name) => {
    const tool = tools.get(name);
    const spec: ToolSpec = { name };
    if (tool?.description !== undefined) spec.description = tool.description;
    if (tool?.inputSchema !== undefined) spec.inputSchema = tool.inputSchema as Json;
    return spec;
  });
  const request: ModelRequest = { ...input, tools: specs };
  if (input.skills !== undefined && input.skills.length > 0) {
    if (!skills) throw new ModelTurnError('skill.unresolved', `the agent uses skills (${input.skills.join(', ')}) but this host has no skill resolver`);
    const texts: { name: string; text: string }[] = [];
    for (const name of input.skills) {
      const skill = await skills(name);
      if (skill === undefined) throw new ModelTurnError('skill.unresolved', `no skill named ${JSON.stringify(name)} is known to this host`);
      texts.push({ name, text: skill.text });
    }
    request.skillTexts = texts;
  }
  const output = await model.generate(request, context);
  const toolCalls = (Array.isArray(output?.toolCalls) ? output.toolCalls : []).map((call) => {
    const tool = tools.get(call?.name);
    return { ...call, effect: tool?.readOnly ? ('read-only' as const) : tool?.idempotent ? ('idempotent' as const) : ('unknown' as const) };
  });
  return { ...output, toolCalls };
}

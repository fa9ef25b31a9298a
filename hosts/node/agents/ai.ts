// Package entry `@gm-hz/agent-dag-workflow/ai`: an agent's model through the Vercel AI SDK.
export { aiSdkModel, AiSdkMissingError, type AiSdkModelOptions } from './ai-sdk-model.js';
export type { ModelDefinition, ModelRequest, SkillResolver, ToolSpec } from '../../core/model-gateway.js';

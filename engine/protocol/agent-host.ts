// The agent protocol types as hosts import them, with the JSON type they are written in.
export type { Json } from '../json.js';
export type { AgentMessage, FinishReason, ModelTurnInput, ModelTurnOutput, TokenUsage, ToolCall } from './agent.js';

// What an agent loop (`agent.run@1` with a `model`) asks a host's model for, and what a model
// turn answers. A model turn is a `model` capability request whose `input` is a `ModelTurnInput`;
// its outcome's `output` is a `ModelTurnOutput`. The journal keeps a compact form of the input
// (`ModelTurnRecord`): the conversation is rebuilt from journaled outputs, never from the request.
import type { Json } from '../json.js';

export interface ToolCall {
  id: string;
  name: string;
  input: Json;
}

/** The conversation of an agent loop. The first message is the node's input. */
export type AgentMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; text?: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; toolName: string; output?: Json; error?: { code: string; message: string } };

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** The gateway request's `input` of one model turn. */
export interface ModelTurnInput {
  /** 1-based. */
  turn: number;
  instructions?: string;
  /** Skill names; the host's skill resolver turns them into text. */
  skills?: readonly string[];
  /** The tools allowed at this moment: the node's `tools` ∩ `spec.requires` ∩ the authority. */
  tools: readonly string[];
  outputSchema?: Json;
  /** The whole conversation so far, built from journaled outputs only. */
  messages: AgentMessage[];
  /** `sha256:` of the canonical JSON of `messages`: what the journal keeps of them. */
  messagesDigest: string;
}

/** What `capability.requested` of a model turn journals as its `input`. */
export interface ModelTurnRecord {
  turn: number;
  tools: readonly string[];
  messagesDigest: string;
  messagesCount: number;
  instructionsDigest?: string;
  skills?: readonly string[];
  outputSchemaDigest?: string;
}

export type FinishReason = 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'error' | 'other';

/** What a host's model returns for one turn. */
export interface ModelTurnOutput {
  text?: string;
  /** `effect`: filled by the host from the tool's definition (read-only, idempotent); default `unknown`. */
  toolCalls: (ToolCall & { effect?: 'read-only' | 'idempotent' | 'unknown' })[];
  usage: TokenUsage;
  finishReason: FinishReason;
}

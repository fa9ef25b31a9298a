// The journal protocol in one place: hosts import these types (`import type`) and the few pure
// values (statuses, the portable-id pattern) from here.
export type { Authority } from './authority.js';
export type { ArtifactRef, AttemptEvidence, CapabilityResult, EdgeDecision, EnvelopeFields, ErrorInfo, EventEnvelope, EventNode, EventPayloads, EventType, ForeachStart, PayloadOf, Resolution } from './events.js';
export type { ActivationRequest, CapabilityError, CaptureMode, Fact, FactOf, FactType } from './facts.js';
export type { CapabilityKind, CapabilityOutcome, GatewayRequest } from './gateway.js';
export type { AgentMessage, FinishReason, ModelTurnInput, ModelTurnOutput, ModelTurnRecord, TokenUsage, ToolCall } from './agent.js';
export type { ExecutionPlan, HostNodeDefinition, PinnedNodeDefinition, PlanTemplate } from './plan.js';
export type { ActivationSummary } from './summary.js';
export type { AgentUsage, CallInFlight, NeedsAttention, RunProjection, WaitingApproval } from './projection.js';
export type { EdgeStatus, Effect, NodeStatus, PausedReason, RunStatus, TerminalRunStatus } from './statuses.js';
export { isTerminalStatus, terminalRunStatuses } from './statuses.js';
export { isPortableId, portableIdPattern, portableIdSource } from './ids.js';
export { CodedError } from './coded-error.js';

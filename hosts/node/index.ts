// The package's main entry: the embedded Node SDK.
export { WorkflowRuntime, WorkflowError, type RuntimeOptions, type LaunchOptions, type LaunchTarget, type WorkflowRunHandle, type AuthorityResolver } from './runtime.js';
export type { GatewayRegistry, ToolDefinition, AgentDefinition, ApprovalHandler, ApprovalRequest, ToolContext } from './gateway.js';
export type { RunOutcome } from '../core/kernel.js';
export type { Authority, ExecutionPlan, ValidationReport, GatewayRequest, CapabilityOutcome } from '../core/types.js';

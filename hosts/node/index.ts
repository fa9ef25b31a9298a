// The package's main entry: the embedded Node SDK.
export { WorkflowRuntime, WorkflowError, type RuntimeOptions, type LaunchOptions, type LaunchTarget, type WorkflowRunHandle, type AuthorityResolver, type LiveItem, type LiveOptions } from './runtime.js';
export { startHttpApi, httpTokenEnvVar, HttpApiConfigError, type HttpApi, type HttpApiOptions } from './http-api.js';
export type { GatewayRegistry, ListedCapability, ToolDefinition, AgentDefinition, ApprovalHandler, ApprovalRequest, ToolContext } from './gateway.js';
export type { RunOutcome } from '../core/kernel.js';
export type { Authority, ExecutionPlan, ValidationReport, GatewayRequest, CapabilityOutcome } from '../core/types.js';
export { WorkflowCatalog, CatalogError, NodeDefinitionRegistry, RunNeedsAttentionError, type CatalogStorage, type WorkflowDraft, type WorkflowRevision, type RunCompatibility } from './catalog.js';
export { SqliteCatalogStorage } from './sqlite-catalog.js';
export { migrateTemplate, type TemplateMigration } from './template-migration.js';
export { parseExport, replayExport, exportFormat, type RunExport } from './export.js';
export type { CapturePolicy } from '../core/kernel.js';
export type { CredentialResolver } from './gateway.js';
export type { McpServerOptions, McpProfile } from './mcp.js';

/**
 * Serves the runtime's workflows as MCP tools (see mcp.ts). The MCP SDK is loaded on this call,
 * not when the package is imported; `createMcpServer` is in the `./mcp` entry.
 */
export async function serveMcp(...args: Parameters<typeof import('./mcp.js').serveMcp>): ReturnType<typeof import('./mcp.js').serveMcp> {
  return (await import('./mcp.js')).serveMcp(...args);
}
export { TriggerScheduler, TriggerError, triggerRunId, type TriggerSpec } from './triggers.js';
export { PostgresJournalStore } from './pg-store.js';
export { appliedWasmTier as engineWasmTier, appliedYoungGen as engineYoungGen, wasmTierEnv, youngGenEnv, type WasmTier, type YoungGen } from '../shared/component.js';
export { PgCatalogStorage } from './pg-catalog.js';
export { BindingCatalog, BindingError, mapInput, parseBindingSpec, resolvePointer, type BindingSpec, type WorkflowBinding, type BindingSource, type BindingState, type DeliveryTarget, type InputField, type MisfirePolicy } from './bindings.js';
export { TriggerPipeline, TriggerRejected, ingressRunId, type TriggerEvent, type Admission, type PipelineOptions } from './ingress.js';
export { handleWebhook, signWebhook, webhookHeaders } from './webhook.js';
export { handleDingtalk, signDingtalk, dingtalkText } from './dingtalk.js';
export { CronBindingScheduler, slotEventId, type CronBindingOptions } from './cron-bindings.js';
export type { TriggerStorage, IngressRecord, IngressStatus, IngressFilter } from './trigger-storage.js';

// The package's main entry: the embedded Node SDK.
export { WorkflowRuntime, WorkflowError, type RuntimeOptions, type LaunchOptions, type LaunchTarget, type NodeType, type WorkflowRunHandle, type AuthorityResolver, type LiveItem, type LiveOptions } from './runtime.js';
export { startHttpApi, httpTokenEnvVar, HttpApiConfigError, type HttpApi, type HttpApiOptions } from './observe/http-api.js';
export type { GatewayRegistry, ListedCapability, ToolDefinition, AgentDefinition, ApprovalHandler, ApprovalRequest, ToolContext, NodeImplementation, NodeContext } from './sdk/gateway.js';
export type { RunOutcome } from '../core/kernel.js';
export type { Authority, ExecutionPlan, ValidationReport, GatewayRequest, CapabilityOutcome } from '../core/types.js';
export { WorkflowCatalog, CatalogError, NodeDefinitionRegistry, RunNeedsAttentionError, type CustomNodeDefinition, type CatalogStorage, type WorkflowDraft, type WorkflowRevision, type RunCompatibility } from './catalog/catalog.js';
export { SqliteCatalogStorage } from './stores/sqlite/catalog.js';
export { migrateTemplate, type TemplateMigration } from './catalog/template-migration.js';
export { parseExport, replayExport, exportFormat, type RunExport } from './sdk/export.js';
export type { CapturePolicy } from '../core/kernel.js';
export type { CredentialResolver } from './sdk/gateway.js';
export type { McpServerOptions, McpProfile } from './mcp/server.js';

/**
 * Serves the runtime's workflows as MCP tools (see mcp.ts). The MCP SDK is loaded on this call,
 * not when the package is imported; `createMcpServer` is in the `./mcp` entry.
 */
export async function serveMcp(...args: Parameters<typeof import('./mcp/server.js').serveMcp>): ReturnType<typeof import('./mcp/server.js').serveMcp> {
  return (await import('./mcp/server.js')).serveMcp(...args);
}
export { PostgresJournalStore } from './stores/pg/journal.js';
export { appliedWasmTier as engineWasmTier, appliedYoungGen as engineYoungGen, wasmTierEnv, youngGenEnv, type WasmTier, type YoungGen } from '../shared/component.js';
export { PgCatalogStorage } from './stores/pg/catalog.js';
export { BindingCatalog, BindingError, mapInput, parseBindingSpec, resolvePointer, type BindingSpec, type WorkflowBinding, type BindingSource, type BindingState, type DeliveryTarget, type InputField, type MisfirePolicy } from './triggers/bindings.js';
export { TriggerPipeline, TriggerRejected, ingressRunId, type TriggerEvent, type Admission, type PipelineOptions } from './triggers/ingress.js';
export { handleWebhook, signWebhook, webhookHeaders } from './triggers/webhook.js';
export { handleDingtalk, signDingtalk, dingtalkText } from './triggers/dingtalk.js';
export { CronBindingScheduler, slotEventId, type CronBindingOptions } from './triggers/cron-bindings.js';
export type { TriggerStorage, IngressRecord, IngressStatus, IngressFilter } from './stores/trigger-storage.js';

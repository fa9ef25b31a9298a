// `@gm-hz/agent-dag-workflow/core`: the host-independent pieces, for building another host.
export { EngineInstance, EngineCallError, EngineRevivingError, EngineTrapError, type ComponentLoader, type EngineHostImports, type ScriptLimits } from './engine-instance.js';
export { assertRunInput, assertTemplateJson, jsonInputLimits, jsonValueProblem, JsonInputError } from './json-input.js';
export { Kernel, KernelError, type KernelOptions, type RunOutcome } from './kernel.js';
export { StoreError, assertPortableId, portableIdPattern, type JournalStore, type CommitEntry, type RunTail, type RunRecord, type EventPage, type CommitRejection } from './store.js';
export { outcomeOfThrown, type Gateway, type GatewayContext } from './gateway.js';
export { registryGateway, RegisteredCapabilities, scopeCovers, type ListedCapability, type GatewayRegistry, type NodeImplementation, type NodeContext, type NodeImplementations, type ToolDefinition, type AgentDefinition, type ApprovalHandler, type ApprovalRequest, type CredentialResolver, type ToolContext, type ModelDefinition, type SkillResolver, type ToolSpec } from './gateway-registry.js';
export { HostError, authorityResolver, allowEverything, type AuthorityResolver, type LaunchTarget, type RunView } from './host-runtime.js';
export * from './types.js';

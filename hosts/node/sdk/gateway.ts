// The Node host's gateway: the shared registry of tools, agents, approval handlers and the
// credential resolver (hosts/core/gateway-registry.ts), carried out as soon as a call is asked.
export {
  registryGateway,
  RegisteredCapabilities,
  type AgentDefinition,
  type ApprovalHandler,
  type ApprovalRequest,
  type CredentialResolver,
  type GatewayRegistry,
  type ListedCapability,
  type NodeContext,
  type NodeImplementation,
  type NodeImplementations,
  type ToolContext,
  type ToolDefinition,
} from '../../core/gateway-registry.js';

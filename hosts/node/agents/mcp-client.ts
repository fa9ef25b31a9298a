// Package entry `@gm-hz/agent-dag-workflow/mcp-client`: MCP servers' tools as an agent's tools.
export { mcpTools, McpToolError, type McpServerOptions, type McpTools, type McpTransportOptions } from './mcp-tools.js';

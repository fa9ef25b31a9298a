// The MCP gateway over Streamable HTTP on `serve --http` (`POST /v1/mcp`): remote agents reach the
// same tools as over stdio, and who they are is the bearer token's principal — a named operator
// token's name, or `operator` — never an argument. Stateless: each request gets a gateway of its
// own for the principal that sent it (the MCP SDK's stateless mode), so no session outlives the
// request that authenticated it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { WorkflowRuntime } from '../runtime.js';
import { createMcpGateway, type McpServerOptions } from './server.js';

/** What `serve --http-mcp` exposes: the profiles and policy, for every principal alike. */
export type HttpMcpOptions = Omit<McpServerOptions, 'principal'>;

/** Answers one MCP request as `principal`. */
export async function handleMcpRequest(runtime: WorkflowRuntime, req: IncomingMessage, res: ServerResponse, options: HttpMcpOptions, principal: string): Promise<void> {
  const gateway = createMcpGateway(runtime, { ...options, principal: { id: principal } });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    void transport.close();
    void gateway.close();
  });
  await gateway.connect(transport);
  await transport.handleRequest(req, res);
}

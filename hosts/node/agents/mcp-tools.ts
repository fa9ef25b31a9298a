// Tools of MCP servers as the gateway registry's ToolDefinitions, so an agent loop's model can call
// them. Each server has an allow-list: a tool outside it is never registered, so the engine refuses
// a call to it before anything reaches the server. Names are namespaced `<server>.<tool>` so two
// servers with a tool of the same name never collide and `tool:<server>.<tool>` in a template's
// `spec.requires` says which server it trusts.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ToolDefinition } from '../../core/gateway-registry.js';

export type McpTransportOptions = { command: string; args?: string[]; env?: Record<string, string> } | { url: string };

export interface McpServerOptions {
  name: string;
  transport: McpTransportOptions;
  /** Tool names (as the server spells them) to register; all of the server's tools when absent. */
  allow?: string[];
}

export interface McpTools {
  tools: Record<string, ToolDefinition>;
  /** Closes every server connection (a stdio server's process ends with it). */
  close(): Promise<void>;
}

/** A tool call the MCP server answered with `isError`; the agent's model sees it as a tool error. */
export class McpToolError extends Error {
  readonly code = 'mcp.tool-error';
  readonly retryable = false;
}

export async function mcpTools(options: { servers: McpServerOptions[]; clientName?: string }): Promise<McpTools> {
  const clients: Client[] = [];
  const tools: Record<string, ToolDefinition> = {};
  const close = async () => {
    await Promise.allSettled(clients.map((client) => client.close()));
  };
  try {
    for (const server of options.servers) {
      const client = new Client({ name: options.clientName ?? 'agent-dag-workflow', version: '1' });
      const transport = 'url' in server.transport ? new StreamableHTTPClientTransport(new URL(server.transport.url)) : new StdioClientTransport({ command: server.transport.command, args: server.transport.args ?? [], ...(server.transport.env ? { env: server.transport.env } : {}) });
      await client.connect(transport);
      clients.push(client);
      const allow = server.allow ? new Set(server.allow) : undefined;
      const listed = await listAll(client);
      for (const tool of listed) {
        if (allow && !allow.has(tool.name)) continue;
        const definition: ToolDefinition = {
          async execute(input: unknown) {
            const result = await client.callTool({ name: tool.name, arguments: (input ?? {}) as Record<string, unknown> });
            if (result.isError) throw new McpToolError(textOf(result.content) || `the MCP tool ${tool.name} failed`);
            if (result.structuredContent !== undefined) return result.structuredContent;
            return textOf(result.content);
          },
        };
        if (tool.description !== undefined) definition.description = tool.description;
        if (tool.inputSchema !== undefined) definition.inputSchema = tool.inputSchema;
        if (tool.annotations?.readOnlyHint === true) definition.readOnly = true;
        if (tool.annotations?.idempotentHint === true) definition.idempotent = true;
        tools[`${server.name}.${tool.name}`] = definition;
      }
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { tools, close };
}

async function listAll(client: Client) {
  const all = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    all.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return all;
}

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .filter((part): part is { type: 'text'; text: string } => part?.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text)
    .join('');
}

// mcpTools over Streamable HTTP: an MCP server on loopback (stateless, one transport per request)
// whose every call is appended to a log file, the oracle of which calls reached it.
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { mcpTools, McpToolError, type McpTools } from '../../hosts/node/agents/mcp-tools.js';
import type { ToolContext } from '../../hosts/core/gateway-registry.js';

const context = { runId: 'r1', nodeId: 'n1', attempt: 1 } as ToolContext;
let http: Server | undefined;
let open: McpTools | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
  await new Promise<void>((done) => (http ? http.close(() => done()) : done()));
  http = undefined;
});

function mcpServer(log: string) {
  const server = new McpServer({ name: 'http-log', version: '1' });
  server.registerTool('search', { description: 'Searches', inputSchema: { q: z.string() }, outputSchema: { hits: z.array(z.string()) }, annotations: { readOnlyHint: true, idempotentHint: true } }, async ({ q }) => {
    appendFileSync(log, JSON.stringify({ tool: 'search', q }) + '\n');
    return { content: [{ type: 'text', text: 'hits' }], structuredContent: { hits: [`${q}-1`] } };
  });
  server.registerTool('broken', { description: 'Always fails' }, async () => {
    appendFileSync(log, JSON.stringify({ tool: 'broken' }) + '\n');
    return { content: [{ type: 'text', text: 'disk full' }], isError: true };
  });
  server.registerTool('drop', { description: 'Drops a table' }, async () => {
    appendFileSync(log, JSON.stringify({ tool: 'drop' }) + '\n');
    return { content: [{ type: 'text', text: 'dropped' }] };
  });
  return server;
}

async function listen(log: string) {
  http = createServer(async (req, res) => {
    let body = '';
    for await (const part of req) body += part;
    const server = mcpServer(log);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  });
  await new Promise<void>((done) => http!.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(http!.address() as AddressInfo).port}/mcp`;
}

describe('mcpTools over Streamable HTTP', () => {
  it('calls allowed tools, returns structured content, turns isError into mcp.tool-error, and never registers the rest', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'mcp-http-')), 'calls.log');
    open = await mcpTools({ servers: [{ name: 'web', transport: { url: await listen(log) }, allow: ['search', 'broken'] }] });
    expect(Object.keys(open.tools).sort()).toEqual(['web.broken', 'web.search']);
    expect({ readOnly: open.tools['web.search']!.readOnly, idempotent: open.tools['web.search']!.idempotent }).toEqual({ readOnly: true, idempotent: true });
    expect(existsSync(log)).toBe(false);
    expect(await open.tools['web.search']!.execute({ q: 'dag' }, context)).toEqual({ hits: ['dag-1'] });
    const failure = await Promise.resolve(open.tools['web.broken']!.execute({}, context)).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(McpToolError);
    expect({ code: (failure as McpToolError).code, message: (failure as McpToolError).message }).toEqual({ code: 'mcp.tool-error', message: 'disk full' });
    expect(readFileSync(log, 'utf8').trim().split('\n').map((line) => JSON.parse(line))).toEqual([{ tool: 'search', q: 'dag' }, { tool: 'broken' }]);
  });
});

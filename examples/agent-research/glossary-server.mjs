// A small MCP server over stdio: a glossary the research agent may read (and a tool it may not).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const glossary = {
  dag: 'A directed acyclic graph: nodes joined by one-way edges with no cycle.',
  journal: 'The append-only record of every event of a run, from which its state is rebuilt.',
};
const server = new McpServer({ name: 'glossary', version: '1' });
server.registerTool('define', { description: 'Defines a term of the glossary', inputSchema: { term: z.string() }, annotations: { readOnlyHint: true } }, async ({ term }) => ({
  content: [{ type: 'text', text: glossary[term.toLowerCase()] ?? `no entry for ${term}` }],
}));
server.registerTool('erase', { description: 'Erases the glossary' }, async () => ({ content: [{ type: 'text', text: 'erased' }] }));
await server.connect(new StdioServerTransport());

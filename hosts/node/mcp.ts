// An MCP server over the embedded runtime: AI agents validate, run, inspect, approve and replay
// workflows as MCP tools (stdio transport). Every result is JSON; every failure names its code.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';
import type { WorkflowRuntime } from './runtime.js';

const serverVersion = '0.1.0';

type ToolResult = { content: { type: 'text'; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

function ok(value: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

function failure(err: unknown): ToolResult {
  const e = err as { code?: string; message?: string; detail?: unknown };
  const error = { code: e.code ?? 'host.error', message: e.message ?? String(err), ...(e.detail !== undefined ? { detail: e.detail } : {}) };
  return { content: [{ type: 'text', text: JSON.stringify({ error }) }], structuredContent: { error }, isError: true };
}

async function guarded(fn: () => Promise<Record<string, unknown>> | Record<string, unknown>): Promise<ToolResult> {
  try {
    return ok(await fn());
  } catch (err) {
    return failure(err);
  }
}

const json = z.record(z.string(), z.unknown());

/** Builds the MCP server; `connect` it to a transport (stdio for `agent-workflow mcp`). */
export function createMcpServer(runtime: WorkflowRuntime): McpServer {
  const server = new McpServer({ name: 'agent-workflow', version: serverVersion });

  server.registerTool(
    'validate_template',
    { description: 'Validate a WorkflowTemplate. Returns every error with a stable code, a JSON pointer and a message.', inputSchema: { template: json } },
    ({ template }) => guarded(() => ({ ...runtime.validate(template) })),
  );

  server.registerTool(
    'run_workflow',
    {
      description: 'Run a template (inline) or a published revision (id + revision) and wait until it completes, fails, is cancelled or pauses for a person.',
      inputSchema: { template: json.optional(), id: z.string().optional(), revision: z.number().int().positive().optional(), input: z.unknown().optional() },
    },
    ({ template, id, revision, input }) =>
      guarded(async () => {
        if ((template === undefined) === (id === undefined)) throw Object.assign(new Error('give either template, or id and revision'), { code: 'mcp.bad-arguments' });
        const target = template !== undefined ? { type: 'inline' as const, template } : { type: 'published' as const, id: id!, revision: revision ?? 0 };
        const handle = await runtime.launch(target as never, { input: input ?? {} });
        return { ...(await handle.settled()) };
      }),
  );

  server.registerTool(
    'get_run',
    { description: "A run's status, result or error, and its last event seq.", inputSchema: { runId: z.string() } },
    ({ runId }) => guarded(async () => ({ ...(await runtime.getRun(runId)) })),
  );

  server.registerTool(
    'list_runs',
    { description: 'Runs, newest first, optionally filtered by status.', inputSchema: { status: z.array(z.string()).optional(), limit: z.number().int().positive().max(1000).optional() } },
    ({ status, limit }) => guarded(async () => ({ runs: await runtime.listRuns({ statuses: status, limit }) })),
  );

  server.registerTool(
    'read_events',
    { description: "A page of a run's journal, ascending by seq.", inputSchema: { runId: z.string(), afterSeq: z.number().int().min(0).optional(), limit: z.number().int().positive().max(1000).optional() } },
    ({ runId, afterSeq, limit }) => guarded(async () => ({ ...(await runtime.readEvents(runId, { afterSeq, limit: limit ?? 200 })) })),
  );

  server.registerTool(
    'decide_approval',
    { description: 'Approve or reject a human.approval@1 node that is waiting.', inputSchema: { runId: z.string(), nodeId: z.string(), approved: z.boolean(), by: z.string(), comment: z.string().optional() } },
    ({ runId, nodeId, approved, by, comment }) =>
      guarded(async () => {
        await runtime.approve(runId, nodeId, { by, approved, ...(comment !== undefined ? { comment } : {}) });
        return { ...(await runtime.follow(runId).settled()) };
      }),
  );

  server.registerTool(
    'resolve_node',
    {
      description: 'Settle a node (or a foreach item) whose outcome is unknown after a crash: succeeded with an output, retry, or fail.',
      inputSchema: { runId: z.string(), nodeId: z.string(), by: z.string(), resolution: z.enum(['succeeded', 'retry', 'fail']), output: z.unknown().optional(), reason: z.string().optional(), item: z.number().int().min(0).optional() },
    },
    ({ runId, nodeId, by, resolution, output, reason, item }) =>
      guarded(async () => {
        await runtime.resolve(runId, nodeId, { by, ...(item !== undefined ? { item } : {}), ...(resolution === 'succeeded' ? { succeeded: output ?? null } : resolution === 'retry' ? { retry: true } : { fail: reason ?? 'failed by an operator' }) });
        return { ...(await runtime.follow(runId).settled()) };
      }),
  );

  server.registerTool(
    'cancel_run',
    { description: 'Cancel a run and every call it has in flight.', inputSchema: { runId: z.string(), reason: z.string().optional(), by: z.string().optional() } },
    ({ runId, reason, by }) => guarded(async () => ({ ...(await runtime.cancel(runId, { reason: reason ?? 'cancelled through MCP', by: by ?? 'mcp' })) })),
  );

  server.registerTool(
    'replay_run',
    { description: 'Inspect a run (fold its journal) or replay it recorded (re-run engine and scripts against recorded results, no tool is called).', inputSchema: { runId: z.string(), mode: z.enum(['inspect', 'recorded']) } },
    ({ runId, mode }) => guarded(() => runtime.replay(runId, { mode })),
  );

  return server;
}

/** Serves MCP on a transport (stdio by default) until the transport closes. */
export async function serveMcp(runtime: WorkflowRuntime, transport: Transport = new StdioServerTransport()): Promise<McpServer> {
  const server = createMcpServer(runtime);
  await server.connect(transport);
  return server;
}

// An MCP server over the embedded runtime: AI agents validate, run, inspect, approve and replay
// workflows as MCP tools (stdio transport). Every result is JSON; every failure names its code.
//
// Tools come in profiles fixed when the server starts; a tool outside the enabled profiles is
// never registered, so it is neither listed nor callable. The default is `invoke` only: an agent
// that may run workflows may not also approve its own gates or publish templates.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';
import type { WorkflowRuntime } from '../runtime.js';

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

/** What the MCP SDK hands a tool handler beside its arguments (the part this server uses). */
interface RequestExtra {
  _meta?: { progressToken?: string | number };
  sendNotification: (notification: { method: 'notifications/progress'; params: { progressToken: string | number; progress: number; message?: string } }) => Promise<void>;
}

/**
 * MCP progress notifications for a run the client started with a progress token: one per
 * committed event, `progress` its seq (so it only grows), `message` its type and node. Live-only
 * progress of calls is not sent (it has no seq to grow with). A client gone is not an error.
 */
async function reportProgress(runtime: WorkflowRuntime, runId: string, progressToken: string | number, send: RequestExtra['sendNotification'], signal: AbortSignal): Promise<void> {
  try {
    for await (const item of runtime.live(runId, { signal })) {
      if (item.kind !== 'event') continue;
      const node = item.event.node as { id?: string } | undefined;
      await send({ method: 'notifications/progress', params: { progressToken, progress: item.seq, message: `${item.event.type}${node?.id ? ` ${node.id}` : ''}` } });
    }
  } catch {
    // The notifications are a courtesy: the tool's result says how the run ended.
  }
}

export const mcpProfiles = ['invoke', 'author', 'operator'] as const;
export type McpProfile = (typeof mcpProfiles)[number];

/** Which profile each tool belongs to. */
export const mcpToolProfiles: Record<string, McpProfile> = {
  search_workflows: 'invoke',
  describe_workflow: 'invoke',
  run_workflow: 'invoke',
  get_run: 'invoke',
  list_runs: 'invoke',
  read_events: 'invoke',
  replay_run: 'invoke',
  validate_template: 'author',
  get_draft: 'author',
  put_draft: 'author',
  diff_revisions: 'author',
  publish_workflow: 'author',
  decide_approval: 'operator',
  resolve_node: 'operator',
  cancel_run: 'operator',
};

/** Parses `invoke,operator`; an unknown name is an error with code `mcp.bad-profile`. */
export function parseMcpProfiles(text: string | undefined): McpProfile[] {
  if (text === undefined) return ['invoke'];
  const names = text.split(',').map((p) => p.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(mcpProfiles as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0) throw Object.assign(new Error(`unknown MCP profile ${JSON.stringify(unknown[0] ?? text)}; profiles are ${mcpProfiles.join(', ')}`), { code: 'mcp.bad-profile' });
  return [...new Set(names)] as McpProfile[];
}

export interface McpServerOptions {
  /** Tool sets to expose (default `['invoke']`). */
  profiles?: readonly McpProfile[];
}

/** Builds the MCP server; `connect` it to a transport (stdio for `agent-workflow mcp`). */
export function createMcpServer(runtime: WorkflowRuntime, options: McpServerOptions = {}): McpServer {
  const mcp = new McpServer({ name: 'agent-workflow', version: serverVersion });
  const enabled = new Set<McpProfile>(options.profiles ?? ['invoke']);
  // A tool call waits for a live engine instance (one being rebuilt after a trap).
  const live = (fn: () => Promise<Record<string, unknown>> | Record<string, unknown>) =>
    guarded(async () => {
      await runtime.engine.ready();
      return fn();
    });
  // Registers only the tools of the enabled profiles; every tool must have a profile.
  const server = {
    registerTool(name: string, config: any, handler: (args: any, extra: RequestExtra) => Promise<ToolResult>): void {
      const profile = mcpToolProfiles[name];
      if (!profile) throw new Error(`MCP tool ${name} has no profile`);
      if (enabled.has(profile)) mcp.registerTool(name, config, handler as never);
    },
  };

  server.registerTool(
    'validate_template',
    { description: 'Validate a WorkflowTemplate. Returns every error with a stable code, a JSON pointer and a message.', inputSchema: { template: json } },
    ({ template }) => live(async () => ({ ...(await runtime.validate(template)) })),
  );

  server.registerTool(
    'run_workflow',
    {
      description:
        'Run a template (inline) or a published revision (id + revision) and wait until it completes, fails, is cancelled or pauses for a person. ' +
        'delivery (optional) sends the result, and each approval the run waits for, to { kind: "webhook", url, secretRef? } or { kind: "dingtalk", webhookUrl, secretRef? }; secretRef names an environment variable of the sending worker.',
      inputSchema: { template: json.optional(), id: z.string().optional(), revision: z.number().int().positive().optional(), input: z.unknown().optional(), delivery: z.unknown().optional() },
    },
    ({ template, id, revision, input, delivery }, extra) =>
      live(async () => {
        if ((template === undefined) === (id === undefined)) throw Object.assign(new Error('give either template, or id and revision'), { code: 'mcp.bad-arguments' });
        const target = template !== undefined ? { type: 'inline' as const, template } : { type: 'published' as const, id: id!, revision: revision ?? 0 };
        // A W3C trace context in the request's `_meta.traceparent` (as MCP clients that trace send it).
        const traceparent = (extra?._meta as { traceparent?: unknown } | undefined)?.traceparent;
        const handle = await runtime.launch(target as never, { input: input ?? {}, actor: 'mcp', ...(delivery !== undefined ? { delivery: delivery as never } : {}), ...(typeof traceparent === 'string' ? { traceparent } : {}) });
        const token = extra?._meta?.progressToken;
        const stop = new AbortController();
        const reporting = token === undefined ? undefined : reportProgress(runtime, handle.runId, token, extra.sendNotification, stop.signal);
        const outcome = await handle.settled();
        // A run that ended ends its stream after its last commit; a paused one would wait on.
        if (outcome.status === 'paused') stop.abort();
        await reporting;
        return { ...outcome };
      }),
  );

  server.registerTool(
    'get_run',
    { description: "A run's status, result or error, and its last event seq.", inputSchema: { runId: z.string() } },
    ({ runId }) => live(async () => ({ ...(await runtime.getRun(runId)) })),
  );

  server.registerTool(
    'list_runs',
    { description: 'Runs, newest first, optionally filtered by status.', inputSchema: { status: z.array(z.string()).optional(), limit: z.number().int().positive().max(1000).optional() } },
    ({ status, limit }) => live(async () => ({ runs: await runtime.listRuns({ statuses: status, limit }) })),
  );

  server.registerTool(
    'read_events',
    { description: "A page of a run's journal, ascending by seq.", inputSchema: { runId: z.string(), afterSeq: z.number().int().min(0).optional(), limit: z.number().int().positive().max(1000).optional() } },
    ({ runId, afterSeq, limit }) => live(async () => ({ ...(await runtime.readEvents(runId, { afterSeq, limit: limit ?? 200 })) })),
  );

  server.registerTool(
    'decide_approval',
    { description: 'Approve or reject a human.approval@1 node that is waiting.', inputSchema: { runId: z.string(), nodeId: z.string(), approved: z.boolean(), by: z.string(), comment: z.string().optional() } },
    ({ runId, nodeId, approved, by, comment }) =>
      live(async () => {
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
      live(async () => {
        await runtime.resolve(runId, nodeId, { by, ...(item !== undefined ? { item } : {}), ...(resolution === 'succeeded' ? { succeeded: output ?? null } : resolution === 'retry' ? { retry: true } : { fail: reason ?? 'failed by an operator' }) });
        return { ...(await runtime.follow(runId).settled()) };
      }),
  );

  server.registerTool(
    'cancel_run',
    { description: 'Cancel a run and every call it has in flight.', inputSchema: { runId: z.string(), reason: z.string().optional(), by: z.string().optional() } },
    ({ runId, reason, by }) => live(async () => ({ ...(await runtime.cancel(runId, { reason: reason ?? 'cancelled through MCP', by: by ?? 'mcp' })) })),
  );

  server.registerTool(
    'replay_run',
    { description: 'Inspect a run (fold its journal) or replay it recorded (re-run engine and scripts against recorded results, no tool is called).', inputSchema: { runId: z.string(), mode: z.enum(['inspect', 'recorded']) } },
    ({ runId, mode }) => live(() => runtime.replay(runId, { mode })),
  );

  server.registerTool(
    'search_workflows',
    { description: 'Search the catalog of published workflows and drafts by id, name, description and labels.', inputSchema: { text: z.string() } },
    ({ text }) => live(async () => ({ hits: await runtime.catalog.search(text) })),
  );

  server.registerTool(
    'describe_workflow',
    { description: 'A published revision: its input schema (view schema), its template, or its pinned plan.', inputSchema: { id: z.string(), revision: z.number().int().positive(), view: z.enum(['schema', 'template', 'plan']).optional() } },
    ({ id, revision, view }) => live(() => runtime.catalog.describe(id, revision, view ?? 'schema')),
  );

  server.registerTool(
    'get_draft',
    { description: "A workflow's mutable draft and its draft revision (needed to put or publish).", inputSchema: { id: z.string() } },
    ({ id }) => live(async () => ({ draft: await runtime.catalog.getDraft(id) })),
  );

  server.registerTool(
    'put_draft',
    { description: 'Create or replace a draft (compare-and-set: expectedDraftRevision is 0 for a new draft).', inputSchema: { template: json, expectedDraftRevision: z.number().int().min(0), by: z.string().optional() } },
    ({ template, expectedDraftRevision, by }) => live(async () => ({ draft: await runtime.catalog.putDraft(template, { expectedDraftRevision, by: by ?? 'mcp' }) })),
  );

  server.registerTool(
    'diff_revisions',
    { description: 'Semantic diff of two published revisions.', inputSchema: { a: z.object({ id: z.string(), revision: z.number().int().positive() }), b: z.object({ id: z.string(), revision: z.number().int().positive() }) } },
    ({ a, b }) => live(async () => ({ ...(await runtime.catalog.diff(a, b)) })),
  );

  server.registerTool(
    'publish_workflow',
    { description: 'Publish the draft as an immutable revision (compare-and-set on the draft revision).', inputSchema: { id: z.string(), expectedDraftRevision: z.number().int().positive(), by: z.string().optional() } },
    ({ id, expectedDraftRevision, by }) =>
      live(async () => {
        const { template: _template, ...revision } = await runtime.catalog.publish(id, { expectedDraftRevision, by: by ?? 'mcp' });
        return { revision };
      }),
  );

  return mcp;
}

/** Serves MCP on a transport (stdio by default) until the transport closes. */
export async function serveMcp(runtime: WorkflowRuntime, transport: Transport = new StdioServerTransport(), options: McpServerOptions = {}): Promise<McpServer> {
  const server = createMcpServer(runtime, options);
  await server.connect(transport);
  return server;
}

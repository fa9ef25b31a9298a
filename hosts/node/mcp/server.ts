// An MCP server over the embedded runtime: AI agents validate, run, inspect, approve and replay
// workflows as MCP tools (stdio transport). Every result is JSON; every failure names its code.
//
// Tools come in profiles fixed when the server starts; a tool outside the enabled profiles is
// never registered, so it is neither listed nor callable. The default is `invoke` only: an agent
// that may run workflows may not also approve its own gates or publish templates.
//
// Who acts is the session's principal, fixed when the server starts (for stdio: the person or
// service that started it): every launch runs under it, every approval, resolution, cancel and
// publish is recorded as it. No tool takes an identity as an argument. What an invoke caller may
// launch is the deployment's policy: published revisions only unless inline templates are allowed,
// no delivery target unless deliveries are allowed, and then only secretRefs the policy names.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { z } from 'zod';
import { deliveryTargetOf } from '../delivery/target.js';
import type { WorkflowRuntime } from '../runtime.js';
import { packageVersion } from '../version.js';

const serverVersion = packageVersion;

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

/** Which profile each tool belongs to (the names of design §10.3). */
export const mcpToolProfiles: Record<string, McpProfile> = {
  workflow_search: 'invoke',
  workflow_describe: 'invoke',
  workflow_run: 'invoke',
  workflow_run_get: 'invoke',
  workflow_runs_list: 'invoke',
  workflow_trace: 'invoke',
  workflow_replay: 'invoke',
  workflow_nodes_list: 'author',
  workflow_validate: 'author',
  workflow_draft_get: 'author',
  workflow_draft_put: 'author',
  workflow_diff: 'author',
  workflow_publish: 'author',
  workflow_approve: 'operator',
  workflow_resolve: 'operator',
  workflow_cancel: 'operator',
};

/** Parses `invoke,operator`; an unknown name is an error with code `mcp.bad-profile`. */
export function parseMcpProfiles(text: string | undefined): McpProfile[] {
  if (text === undefined) return ['invoke'];
  const names = text.split(',').map((p) => p.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(mcpProfiles as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0) throw Object.assign(new Error(`unknown MCP profile ${JSON.stringify(unknown[0] ?? text)}; profiles are ${mcpProfiles.join(', ')}`), { code: 'mcp.bad-profile' });
  return [...new Set(names)] as McpProfile[];
}

/** The session's principal: who every launch runs as and every action is recorded as. */
export interface McpPrincipal {
  id: string;
  /** The scopes it asks for at launch (default `['*']`); the runtime's `authorities` may narrow or refuse. */
  scopes?: readonly string[];
}

export interface McpServerOptions {
  /** Tool sets to expose (default `['invoke']`). */
  profiles?: readonly McpProfile[];
  /** Who the session is (default `{ id: 'mcp' }`). */
  principal?: McpPrincipal;
  /** Whether `workflow_run` runs a template given inline (default false: published revisions only). */
  allowInline?: boolean;
  /**
   * Whether `workflow_run` takes a delivery target (default false), and the `secretRef`s a target
   * may name (default none: unsigned webhooks only). The delivery guard still refuses non-public
   * addresses when it sends.
   */
  deliveries?: { allow: boolean; secretRefs?: readonly string[] };
}

/** A refusal of the server's policy or of a tool's arguments, with its code. */
function refused(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** Identity is the session's: an argument that names one is refused, never believed. */
const identityArgument = z.unknown().optional().describe('not accepted: actions are recorded as the session principal');
function noIdentity(by: unknown): void {
  if (by !== undefined) throw refused('mcp.identity-argument', 'by is not accepted: every action is recorded as the session principal the server was started with');
}

/** The delivery target a caller asked for, within the server's policy. */
function deliveryWithin(policy: McpServerOptions['deliveries'], delivery: unknown) {
  if (!policy?.allow) throw refused('mcp.delivery-not-allowed', 'this server does not take delivery targets (start it with --allow-deliveries)');
  const target = deliveryTargetOf(delivery);
  const secretRef = (target as { secretRef?: string }).secretRef;
  if (secretRef !== undefined && !(policy.secretRefs ?? []).includes(secretRef)) {
    throw refused('mcp.secret-not-allowed', `secretRef ${JSON.stringify(secretRef)} is not one this server allows (--delivery-secrets)`);
  }
  return target;
}

/** Builds the MCP gateway; `connect` it to a transport (stdio for `agent-workflow mcp`). */
export function createMcpGateway(runtime: WorkflowRuntime, options: McpServerOptions = {}): McpServer {
  const mcp = new McpServer({ name: 'agent-workflow', version: serverVersion });
  const enabled = new Set<McpProfile>(options.profiles ?? ['invoke']);
  const principal: McpPrincipal = options.principal ?? { id: 'mcp' };
  const by = principal.id;
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

  // ---- invoke ----

  server.registerTool(
    'workflow_search',
    { description: 'Search the catalog of published workflows and drafts by id, name, description and labels.', inputSchema: { text: z.string() } },
    ({ text }) => live(async () => ({ hits: await runtime.catalog.search(text) })),
  );

  server.registerTool(
    'workflow_describe',
    { description: 'A published revision: its input schema (view schema), its template, or its pinned plan.', inputSchema: { id: z.string(), revision: z.number().int().positive(), view: z.enum(['schema', 'template', 'plan']).optional() } },
    ({ id, revision, view }) => live(() => runtime.catalog.describe(id, revision, view ?? 'schema')),
  );

  server.registerTool(
    'workflow_run',
    {
      description:
        'Run a published revision (id + revision; revision 0 or absent = the latest) and wait until it completes, fails, is cancelled or pauses for a person. ' +
        `The run acts as this session (${by}). ` +
        (options.allowInline ? 'template runs a template given inline instead. ' : 'Inline templates are not allowed on this server. ') +
        (options.deliveries?.allow
          ? 'delivery (optional) sends the result, and each approval the run waits for, to { kind: "webhook", url, secretRef? } or { kind: "dingtalk", webhookUrl, secretRef?, accessTokenRef? }; ' +
            `secretRef may be one of: ${(options.deliveries.secretRefs ?? []).join(', ') || '(none)'}.`
          : 'Delivery targets are not allowed on this server.'),
      inputSchema: { template: json.optional(), id: z.string().optional(), revision: z.number().int().min(0).optional(), input: z.unknown().optional(), delivery: z.unknown().optional() },
    },
    ({ template, id, revision, input, delivery }, extra) =>
      live(async () => {
        if ((template === undefined) === (id === undefined)) throw refused('mcp.bad-arguments', 'give either template, or id and revision');
        if (template !== undefined && !options.allowInline) throw refused('mcp.inline-not-allowed', 'this server runs published revisions only (id and revision); publish the template first, or start the server with --allow-inline');
        const target = template !== undefined ? { type: 'inline' as const, template } : { type: 'published' as const, id: id!, revision: revision ?? 0 };
        const deliveryTarget = delivery !== undefined ? deliveryWithin(options.deliveries, delivery) : undefined;
        // A W3C trace context in the request's `_meta.traceparent` (as MCP clients that trace send it).
        const traceparent = (extra?._meta as { traceparent?: unknown } | undefined)?.traceparent;
        const handle = await runtime.launch(target as never, {
          input: input ?? {},
          actor: 'mcp',
          authority: { id: principal.id, scopes: [...(principal.scopes ?? ['*'])] },
          ...(deliveryTarget !== undefined ? { delivery: deliveryTarget } : {}),
          ...(typeof traceparent === 'string' ? { traceparent } : {}),
        });
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
    'workflow_run_get',
    { description: "A run's status, result or error, and its last event seq.", inputSchema: { runId: z.string() } },
    ({ runId }) => live(async () => ({ ...(await runtime.getRun(runId)) })),
  );

  server.registerTool(
    'workflow_runs_list',
    { description: 'Runs, newest first, optionally filtered by status.', inputSchema: { status: z.array(z.string()).optional(), limit: z.number().int().positive().max(1000).optional() } },
    ({ status, limit }) => live(async () => ({ runs: await runtime.listRuns({ statuses: status, limit }) })),
  );

  server.registerTool(
    'workflow_trace',
    { description: "A page of a run's journal (its trace), ascending by seq.", inputSchema: { runId: z.string(), afterSeq: z.number().int().min(0).optional(), limit: z.number().int().positive().max(1000).optional() } },
    ({ runId, afterSeq, limit }) => live(async () => ({ ...(await runtime.readEvents(runId, { afterSeq, limit: limit ?? 200 })) })),
  );

  server.registerTool(
    'workflow_replay',
    { description: 'Inspect a run (fold its journal) or replay it recorded (re-run engine and scripts against recorded results, no tool is called).', inputSchema: { runId: z.string(), mode: z.enum(['inspect', 'recorded']) } },
    ({ runId, mode }) => live(() => runtime.replay(runId, { mode })),
  );

  // ---- author ----

  server.registerTool(
    'workflow_nodes_list',
    { description: 'The node types a template may use here: the built-in ones and those this host registers, each with its config schema.', inputSchema: {} },
    () => live(() => ({ nodes: runtime.nodeTypes() })),
  );

  server.registerTool(
    'workflow_validate',
    { description: 'Validate a WorkflowTemplate. Returns every error with a stable code, a JSON pointer and a message.', inputSchema: { template: json } },
    ({ template }) => live(async () => ({ ...(await runtime.validate(template)) })),
  );

  server.registerTool(
    'workflow_draft_get',
    { description: "A workflow's mutable draft and its draft revision (needed to put or publish).", inputSchema: { id: z.string() } },
    ({ id }) => live(async () => ({ draft: await runtime.catalog.getDraft(id) })),
  );

  server.registerTool(
    'workflow_draft_put',
    { description: `Create or replace a draft (compare-and-set: expectedDraftRevision is 0 for a new draft), recorded as by ${by}.`, inputSchema: { template: json, expectedDraftRevision: z.number().int().min(0), by: identityArgument } },
    ({ template, expectedDraftRevision, by: asserted }) =>
      live(async () => {
        noIdentity(asserted);
        return { draft: await runtime.catalog.putDraft(template, { expectedDraftRevision, by }) };
      }),
  );

  server.registerTool(
    'workflow_diff',
    { description: 'Semantic diff of two published revisions.', inputSchema: { a: z.object({ id: z.string(), revision: z.number().int().positive() }), b: z.object({ id: z.string(), revision: z.number().int().positive() }) } },
    ({ a, b }) => live(async () => ({ ...(await runtime.catalog.diff(a, b)) })),
  );

  server.registerTool(
    'workflow_publish',
    { description: `Publish the draft as an immutable revision (compare-and-set on the draft revision), recorded as by ${by}.`, inputSchema: { id: z.string(), expectedDraftRevision: z.number().int().positive(), by: identityArgument } },
    ({ id, expectedDraftRevision, by: asserted }) =>
      live(async () => {
        noIdentity(asserted);
        const { template: _template, ...revision } = await runtime.catalog.publish(id, { expectedDraftRevision, by });
        return { revision };
      }),
  );

  // ---- operator ----

  server.registerTool(
    'workflow_approve',
    { description: `Approve or reject a human.approval@1 node that is waiting, as ${by} (the node's approvers decide whether ${by} may).`, inputSchema: { runId: z.string(), nodeId: z.string(), approved: z.boolean(), comment: z.string().optional(), by: identityArgument } },
    ({ runId, nodeId, approved, comment, by: asserted }) =>
      live(async () => {
        noIdentity(asserted);
        await runtime.approve(runId, nodeId, { by, approved, ...(comment !== undefined ? { comment } : {}) });
        return { ...(await runtime.follow(runId).settled()) };
      }),
  );

  server.registerTool(
    'workflow_resolve',
    {
      description:
        `Settle a node (or a foreach item) whose outcome is unknown after a crash, as ${by}: succeeded with an output, retry, or fail. ` +
        'attentionSeq names the unknown decided on (the seq of its node.needs-attention, from workflow_trace); a resolution of an unknown that has changed since is refused (resolve.stale).',
      inputSchema: {
        runId: z.string(),
        nodeId: z.string(),
        resolution: z.enum(['succeeded', 'retry', 'fail']),
        output: z.unknown().optional(),
        reason: z.string().optional(),
        item: z.number().int().min(0).optional(),
        attentionSeq: z.number().int().positive().optional(),
        by: identityArgument,
      },
    },
    ({ runId, nodeId, resolution, output, reason, item, attentionSeq, by: asserted }) =>
      live(async () => {
        noIdentity(asserted);
        await runtime.resolve(runId, nodeId, {
          by,
          ...(item !== undefined ? { item } : {}),
          ...(attentionSeq !== undefined ? { attentionSeq } : {}),
          ...(resolution === 'succeeded' ? { succeeded: output ?? null } : resolution === 'retry' ? { retry: true } : { fail: reason ?? 'failed by an operator' }),
        });
        return { ...(await runtime.follow(runId).settled()) };
      }),
  );

  server.registerTool(
    'workflow_cancel',
    { description: `Cancel a run and every call it has in flight, as ${by}.`, inputSchema: { runId: z.string(), reason: z.string().optional(), by: identityArgument } },
    ({ runId, reason, by: asserted }) =>
      live(async () => {
        noIdentity(asserted);
        return { ...(await runtime.cancel(runId, { reason: reason ?? 'cancelled through MCP', by })) };
      }),
  );

  return mcp;
}

/** The former name of `createMcpGateway`. */
export const createMcpServer = createMcpGateway;

/** Serves MCP on a transport (stdio by default) until the transport closes. */
export async function serveMcp(runtime: WorkflowRuntime, transport: Transport = new StdioServerTransport(), options: McpServerOptions = {}): Promise<McpServer> {
  const server = createMcpGateway(runtime, options);
  await server.connect(transport);
  return server;
}

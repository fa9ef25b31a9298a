// The `@gm-hz/agent-dag-workflow/dsh` entry: workflows inside an agent host of the DSH kind, whose
// context hands every step its tools, subagents, skills, approval channel, owning agent and
// session, and trace. The adapter maps that context onto the runtime's gateways:
//
//   ctx.tools          -> Tool Gateway      every call goes through `ctx.tools.call`, so the
//                                           host's policy pipeline stays in front of every tool
//   ctx.subagents      -> Agent Gateway     `agent.run@1` nodes with `config.agent`
//   ctx.skills         -> Skill resolver    a skill the host does not show is unknown to the run
//   ctx.approval       -> Approval Gateway  undefined leaves the gate to a person (approve/reject)
//   ctx.agent/session  -> Authority         runs act as the session, within its scopes
//   ctx.trace          -> observer          every committed event of the runs it starts, in order
//
// The journal stays the runtime's: the host's trace is told what was committed, never asked.
// docs/hosts.md, "Inside an agent host (DSH)".
import { narrowAuthority } from '../../engine/protocol/authority.js';
import type { ApprovalRequest, GatewayRegistry, ToolContext, ToolDefinition, AgentDefinition } from './sdk/gateway.js';
import type { ModelDefinition } from '../core/model-gateway.js';
import type { AuthorityResolver, LaunchTarget } from '../core/host-runtime.js';
import type { Authority, EventEnvelope } from '../core/types.js';

type JournalEvent = EventEnvelope;
import type { RunOutcome } from '../core/kernel.js';
import { WorkflowRuntime } from './runtime.js';
import type { LaunchOptions, RuntimeOptions } from './sdk/runtime-types.js';

/** A tool as the host lists it. Its effect hints decide what the runtime may do after a crash. */
export interface DshTool {
  name: string;
  description?: string;
  inputSchema?: unknown;
  /** It changes nothing outside: an unknown outcome may be retried. */
  readOnly?: boolean;
  /** Calling it twice with the same `invocationId` has the effect of calling it once. */
  idempotent?: boolean;
}

/** A subagent as the host lists it. */
export interface DshSubagent {
  name: string;
  idempotent?: boolean;
}

/** What the host is told of each call it carries out for a workflow. */
export interface DshCall {
  runId: string;
  nodeId: string;
  attempt: number;
  item?: number;
  /** Stable across retries and restarts of the same attempt: the host's idempotency key. */
  invocationId: string;
  /** Sent again after a restart (only for read-only or idempotent work). */
  reissued: boolean;
  /** Fires when the run cancels the call (timeout, cancel, failure). */
  signal: AbortSignal;
  /** The authority the run acts under for this call. */
  authority?: Authority;
  /** The owning agent and session of the context the run was started from. */
  agentId: string;
  sessionId: string;
  /** W3C trace context of the call's span. */
  traceparent?: string;
  /** Live-only progress (token deltas): shown to watchers, never journaled. */
  progress?: (data: unknown) => void;
}

/** The host context the adapter reads (design §10.1). */
export interface DshHostContext {
  /** The agent that owns the work. */
  agent: { id: string };
  /** The session the work belongs to; its scopes bound what a run may use (default `['*']`). */
  session: { id: string; scopes?: readonly string[] };
  /** The host's tools; `call` is the host's policy pipeline (permissions, audit, rate limits) in front of the tool. */
  tools: {
    list(): readonly DshTool[];
    call(name: string, input: unknown, call: DshCall): unknown | Promise<unknown>;
  };
  subagents?: {
    list(): readonly DshSubagent[];
    run(name: string, input: unknown, call: DshCall & { instructions?: string; outputSchema?: unknown }): unknown | Promise<unknown>;
  };
  /** Skill visibility: a skill the host does not show this session is one the run does not know. */
  skills?: {
    visible(name: string): boolean;
    load(name: string): string | undefined | Promise<string | undefined>;
  };
  /** Where approvals are asked; `undefined` leaves the gate waiting for a person. */
  approval?: {
    request(request: ApprovalRequest & { agentId: string; sessionId: string }): { approved: boolean; by: string; comment?: string } | undefined | Promise<{ approved: boolean; by: string; comment?: string } | undefined>;
  };
  /** Models behind `agent.run@1` nodes' `model` references (an agent loop). */
  models?: Record<string, ModelDefinition>;
  /** The host's observer: each committed event of a run started through the adapter, in seq order. */
  trace?: {
    event(event: JournalEvent): void;
  };
}

/** The authority of the context: the session, within its scopes; a launch may ask for less, never more. */
export function dshAuthority(ctx: DshHostContext): Authority {
  return { id: `${ctx.agent.id}/${ctx.session.id}`, scopes: [...(ctx.session.scopes ?? ['*'])] };
}

function callOf(ctx: DshHostContext, context: ToolContext): DshCall {
  return {
    runId: context.runId,
    nodeId: context.nodeId,
    attempt: context.attempt,
    ...(context.item !== undefined ? { item: context.item } : {}),
    invocationId: context.invocationId,
    reissued: context.reissued,
    signal: context.signal,
    ...(context.authority ? { authority: context.authority } : {}),
    agentId: ctx.agent.id,
    sessionId: ctx.session.id,
    ...(context.traceparent ? { traceparent: context.traceparent } : {}),
    ...(context.progress ? { progress: context.progress } : {}),
  };
}

/**
 * The runtime options that put a DSH host context behind the runtime's gateways: its tools,
 * subagents, skills, approvals and models, and the session as the authority of every run.
 */
export function dshRuntimeOptions(ctx: DshHostContext): GatewayRegistry & { authorities: AuthorityResolver } {
  const tools: Record<string, ToolDefinition> = {};
  for (const t of ctx.tools.list()) {
    tools[t.name] = {
      ...(t.description !== undefined ? { description: t.description } : {}),
      ...(t.inputSchema !== undefined ? { inputSchema: t.inputSchema } : {}),
      ...(t.readOnly ? { readOnly: true } : {}),
      ...(t.idempotent ? { idempotent: true } : {}),
      execute: (input, context) => ctx.tools.call(t.name, input, callOf(ctx, context)),
    };
  }
  const agents: Record<string, AgentDefinition> = {};
  const subagents = ctx.subagents;
  if (subagents) {
    for (const a of subagents.list()) {
      agents[a.name] = {
        ...(a.idempotent ? { idempotent: true } : {}),
        run: (input, context) =>
          subagents.run(a.name, input, {
            ...callOf(ctx, context),
            ...(context.instructions !== undefined ? { instructions: context.instructions } : {}),
            ...(context.outputSchema !== undefined ? { outputSchema: context.outputSchema } : {}),
          }),
      };
    }
  }
  const grant = dshAuthority(ctx);
  const skills = ctx.skills;
  const approval = ctx.approval;
  return {
    tools,
    agents,
    ...(ctx.models ? { models: ctx.models } : {}),
    ...(skills
      ? {
          skills: async (name: string) => {
            if (!skills.visible(name)) return undefined;
            const text = await skills.load(name);
            return text === undefined ? undefined : { text };
          },
        }
      : {}),
    ...(approval ? { approvals: (request: ApprovalRequest) => approval.request({ ...request, agentId: ctx.agent.id, sessionId: ctx.session.id }) } : {}),
    // A launch gets the session's authority, or what it asks for within it; a resume keeps the
    // run's authority of launch.
    authorities: ({ requested, resuming }) => (resuming ? undefined : requested ? narrowAuthority(grant, requested) : grant),
  };
}

/** Workflows run from one DSH host context. */
export interface DshWorkflows {
  readonly runtime: WorkflowRuntime;
  /**
   * Runs a published revision (or an inline template) as the context's session and waits until it
   * completes, fails, is cancelled or pauses for a person; the host's trace sees every event.
   */
  run(target: LaunchTarget | Record<string, unknown>, input: unknown, options?: Omit<LaunchOptions, 'input'>): Promise<RunOutcome>;
  close(): Promise<void>;
}

/** Opens a runtime whose gateways are the context's (`dshRuntimeOptions`), plus `options`. */
export async function openDshRuntime(ctx: DshHostContext, options: Omit<RuntimeOptions, keyof GatewayRegistry | 'authorities'> = {}): Promise<DshWorkflows> {
  const runtime = await WorkflowRuntime.open({ ...options, ...dshRuntimeOptions(ctx) });
  return {
    runtime,
    async run(target, input, launchOptions = {}) {
      const handle = await runtime.launch(target, { ...launchOptions, input });
      const trace = ctx.trace;
      if (!trace) return handle.settled();
      // Events as they are committed, then (the run ended or paused) the rest from the journal,
      // so the trace has each committed event once, in seq order.
      let seen = 0;
      const tell = (event: JournalEvent) => {
        if (event.seq <= seen) return;
        seen = event.seq;
        trace.event(event);
      };
      const stop = new AbortController();
      const watching = (async () => {
        for await (const item of runtime.live(handle.runId, { signal: stop.signal })) if (item.kind === 'event') tell(item.event as unknown as JournalEvent);
      })().catch((err) => {
        if (!stop.signal.aborted) throw err;
      });
      try {
        const outcome = await handle.settled();
        stop.abort();
        await watching;
        for (let page = await runtime.readEvents(handle.runId, { afterSeq: seen, limit: 1000 }); page.events.length > 0; page = await runtime.readEvents(handle.runId, { afterSeq: seen, limit: 1000 })) {
          for (const e of page.events) tell(e as JournalEvent);
        }
        return outcome;
      } finally {
        stop.abort();
      }
    },
    close: () => runtime.close(),
  };
}

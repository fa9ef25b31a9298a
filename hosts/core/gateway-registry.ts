// The gateway registry every host shares: tools, agents and approval handlers registered by the
// embedding application (the Node SDK's options, the router's host module), with credential
// references resolved at call time. Secrets never pass through the engine: a tool receives its
// credential in memory, and whatever a call returns (output, error code and message) is scrubbed
// of every value the credential resolver gave it before the outcome leaves the gateway (see
// redact.ts). A host with work of its own (the router's local processes) puts this registry
// behind its own queue; the Node host uses `registryGateway` as it is.
import { outcomeOfThrown, type Gateway, type GatewayContext } from './gateway.js';
import type { Authority, CapabilityOutcome, GatewayRequest } from './types.js';
import { scrubOutcome, scrubValue, secretStrings } from './redact.js';
import { generateTurn, type ModelDefinition, type SkillResolver } from './model-gateway.js';
import type { ModelTurnInput } from '../../engine/protocol/agent-host.js';
import { nodeCapability } from '../../engine/protocol/authority.js';

export type { ModelDefinition, ModelRequest, SkillResolver, ToolSpec } from './model-gateway.js';

export interface ToolContext extends GatewayContext {
  runId: string;
  nodeId: string;
  attempt: number;
  item?: number;
  /** The secret behind the node's `credentialRef`, resolved for this call only. */
  credential?: unknown;
  /** The connection behind the node's `connectionRef`. */
  connection?: unknown;
  /**
   * The authority the run acts under when this call was staged: the one resolved at launch, or
   * at the latest resume or operator command (approve, resolve, ...) before it.
   */
  authority?: Authority;
}

/**
 * Resolves opaque references to secrets at call time. Whatever it returns reaches the tool in
 * memory only; it is never part of a request, an event, a checkpoint or an artifact.
 */
export type CredentialResolver = (ref: { credentialRef?: string; connectionRef?: string; runId: string; nodeId: string }) => Promise<{ credential?: unknown; connection?: unknown }> | { credential?: unknown; connection?: unknown };

export interface ToolDefinition {
  execute(input: any, context: ToolContext): unknown | Promise<unknown>;
  /** Calling it twice with the same invocation id has the effect of calling it once. */
  idempotent?: boolean;
  /** It changes nothing outside; an unknown outcome may always be retried. */
  readOnly?: boolean;
  /** What an agent's model is told of the tool. */
  description?: string;
  /** JSON Schema of the tool's input, for an agent's model. */
  inputSchema?: unknown;
}

/**
 * What a host's node definition (a template's node of type `vendor.name@1`) is and does: its
 * `config` schema, the effect of running it (as a tool's `readOnly` / `idempotent`), the
 * implementation and its digest. A node of it is called with its resolved inputs and, in the
 * context, its `config`.
 */
export interface NodeImplementation {
  configSchema: unknown;
  /** Default `unknown`: an unknown outcome needs a person. */
  effect?: 'read-only' | 'idempotent' | 'unknown';
  execute?(input: any, context: NodeContext): unknown | Promise<unknown>;
  /** Changes whenever the implementation's behaviour changes; absent in development only. */
  implementationDigest?: string;
  /** JSON Schema every output is checked against. */
  outputSchema?: unknown;
  description?: string;
  /** A short noun for the console. */
  label?: string;
}

export interface NodeContext extends ToolContext {
  /** The node's `config` from the template (credential references left out). */
  config: Record<string, unknown>;
}

/** Where the gateway finds node definitions: the runtime's registry, which may grow after open. */
export interface NodeImplementations {
  get(uses: string): NodeImplementation | undefined;
  /** Every definition, by `uses`. */
  list(): (NodeImplementation & { uses: string })[];
}

/** The registry's `nodes` option as `NodeImplementations`. */
function fixedNodes(nodes: Record<string, NodeImplementation>): NodeImplementations {
  const map = new Map(Object.entries(nodes));
  return {
    get: (uses) => map.get(uses),
    list: () => [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([uses, d]) => ({ ...d, uses })),
  };
}

export interface AgentDefinition {
  run(input: any, context: ToolContext & { instructions?: string; outputSchema?: unknown }): unknown | Promise<unknown>;
  idempotent?: boolean;
}

export interface ApprovalRequest {
  runId: string;
  nodeId: string;
  invocationId: string;
  prompt?: string;
  approvers?: string[];
  input: unknown;
}

/**
 * Decides an approval in process (tests, bots), or returns undefined to leave it to a person
 * (`approve`/`reject` through the SDK or CLI, possibly in another process).
 */
export type ApprovalHandler = (request: ApprovalRequest, context: GatewayContext) => Promise<{ approved: boolean; by: string; comment?: string } | undefined> | { approved: boolean; by: string; comment?: string } | undefined;

export interface GatewayRegistry {
  tools?: Record<string, ToolDefinition | ToolDefinition['execute']>;
  agents?: Record<string, AgentDefinition | AgentDefinition['run']>;
  approvals?: ApprovalHandler;
  credentials?: CredentialResolver;
  /** The models behind agents' `model` references (an agent loop's turns). */
  models?: Record<string, ModelDefinition>;
  /** Turns an agent's skill names into text for its model. */
  skills?: SkillResolver;
  /** Node definitions by `uses` (`vendor.name@1`). */
  nodes?: Record<string, NodeImplementation>;
}

function asTool(t: ToolDefinition | ToolDefinition['execute']): ToolDefinition {
  return typeof t === 'function' ? { execute: t } : t;
}

function asAgent(a: AgentDefinition | AgentDefinition['run']): AgentDefinition {
  return typeof a === 'function' ? { run: a } : a;
}

/** The host's last word on whether a call may start (`GatewayContext.mayStart`); true when it has none. */
function mayStartNow(context: GatewayContext): boolean | Promise<boolean> {
  return context.mayStart ? context.mayStart() : true;
}

function aborted(signal: AbortSignal): Promise<CapabilityOutcome> {
  return new Promise((resolve) => {
    const onAbort = () => resolve({ ok: false, error: { code: 'capability.cancelled', message: String((signal.reason as Error)?.message ?? 'cancelled'), retryable: false } });
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The outcome of `work`, or `capability.cancelled` as soon as the signal fires. Work that goes on
 * after that reports what it really did through `context.late` (scrubbed like any outcome), so the
 * journal keeps it as evidence instead of dropping it.
 */
function raceAbort(work: () => unknown, context: GatewayContext, errorCode: string, secrets: readonly string[]): Promise<CapabilityOutcome> {
  const real: Promise<CapabilityOutcome> = Promise.resolve()
    .then(work)
    .then(
      (o) => ({ ok: true as const, output: o ?? null }),
      (err) => outcomeOfThrown(err, errorCode),
    );
  let settled = false;
  void real.then(() => (settled = true));
  return Promise.race([real, aborted(context.signal)]).then((first) => {
    if (context.signal.aborted && context.late && !settled) context.late(real.then((outcome) => (secrets.length === 0 ? outcome : scrubOutcome(outcome, secrets))));
    return first;
  });
}

/** One capability a run may use under an authority (`RegisteredCapabilities.list`). */
export interface ListedCapability {
  kind: 'tool' | 'agent' | 'model' | 'node';
  /** For a node definition: its `uses`. */
  name: string;
  /** `tool:<name>`, `agent:<name>`, `model:<name>` or `node:<uses without the version>`: what a template's `requires` names. */
  capability: string;
  effect: 'read-only' | 'idempotent' | 'unknown';
  description?: string;
  inputSchema?: unknown;
}

/**
 * Does a granted scope (`*`, `tool:*`, `tool:search`) cover a capability? The same rule the engine
 * applies when a node calls out (engine/nodes/call.ts), kept here so a host can answer without the
 * engine.
 */
export function scopeCovers(scope: string, capability: string): boolean {
  if (scope === '*' || scope === capability) return true;
  return scope.endsWith(':*') && capability.startsWith(scope.slice(0, -1));
}

/** The registered tools and agents of a host, with their effect classes, and how to call them. */
export class RegisteredCapabilities {
  private readonly tools: Map<string, ToolDefinition>;
  private readonly agents: Map<string, AgentDefinition>;
  private readonly nodes: NodeImplementations;

  /** `nodes`: where node definitions are found (default: the registry's `nodes`). */
  constructor(
    private readonly registry: GatewayRegistry,
    nodes?: NodeImplementations,
  ) {
    this.tools = new Map(Object.entries(registry.tools ?? {}).map(([k, v]) => [k, asTool(v)]));
    this.agents = new Map(Object.entries(registry.agents ?? {}).map(([k, v]) => [k, asAgent(v)]));
    this.nodes = nodes ?? fixedNodes(registry.nodes ?? {});
  }

  /** Whether a tool or agent of this name is registered, or (for approvals) a handler decides them here. */
  has(kind: string, name: string): boolean {
    if (kind === 'tool') return this.tools.has(name);
    if (kind === 'agent') return this.agents.has(name);
    if (kind === 'model') return this.registry.models?.[name] !== undefined;
    if (kind === 'approval') return this.registry.approvals !== undefined;
    if (kind === 'node') return this.nodes.get(name) !== undefined;
    return false;
  }

  /** How the registry classifies its capabilities: `tool:<name>` and `agent:<name>` to `read-only`, `idempotent` or `unknown`. */
  effects(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, t] of this.tools) out[`tool:${name}`] = t.readOnly ? 'read-only' : t.idempotent ? 'idempotent' : 'unknown';
    for (const [name, a] of this.agents) out[`agent:${name}`] = a.idempotent ? 'idempotent' : 'unknown';
    // A model turn changes nothing outside.
    for (const name of Object.keys(this.registry.models ?? {})) out[`model:${name}`] = 'read-only';
    return out;
  }

  /**
   * The tools, agents and models a run may use under an authority: those registered here whose
   * capability one of its scopes covers, sorted by capability so the answer is stable.
   */
  list(authority: Authority): ListedCapability[] {
    const effects = this.effects();
    const out: ListedCapability[] = [];
    const add = (kind: ListedCapability['kind'], name: string, extra: { description?: string; inputSchema?: unknown }) => {
      const capability = `${kind}:${name}`;
      if (!authority.scopes.some((s) => scopeCovers(s, capability))) return;
      out.push({ kind, name, capability, effect: effects[capability] as ListedCapability['effect'], ...extra });
    };
    for (const [name, t] of this.tools) add('tool', name, { ...(t.description !== undefined ? { description: t.description } : {}), ...(t.inputSchema !== undefined ? { inputSchema: t.inputSchema } : {}) });
    for (const name of this.agents.keys()) add('agent', name, {});
    for (const name of Object.keys(this.registry.models ?? {})) add('model', name, {});
    // A node definition's capability names its type without the version; its effect is its own.
    for (const d of this.nodes.list()) {
      const capability = nodeCapability(d.uses);
      if (!authority.scopes.some((s) => scopeCovers(s, capability))) continue;
      out.push({ kind: 'node', name: d.uses, capability, effect: d.effect ?? 'unknown', ...(d.description !== undefined ? { description: d.description } : {}) });
    }
    return out.sort((a, b) => (a.capability < b.capability ? -1 : a.capability > b.capability ? 1 : 0));
  }

  /** Carries out one request: credentials resolved, the call raced against cancellation, secrets scrubbed. Never throws. */
  async execute(request: GatewayRequest, context: GatewayContext): Promise<CapabilityOutcome | undefined> {
    const ctx: ToolContext = {
      ...context,
      runId: request.runId,
      nodeId: request.nodeId,
      attempt: request.attempt,
      ...(request.item !== undefined ? { item: request.item } : {}),
      ...(request.authority ? { authority: { id: request.authority.id, scopes: [...request.authority.scopes] } } : {}),
    };
    const secrets: string[] = [];
    // Progress goes to the live view (SSE) and spans as it is reported, so it is scrubbed on the
    // way out, with the secrets this call resolved (filled in before the tool starts).
    const progress = context.progress;
    if (progress) ctx.progress = (data: unknown) => progress(secrets.length === 0 ? data : scrubValue(data, secrets));
    const outcome = await this.executeResolved(request, context, ctx, secrets);
    return outcome === undefined || secrets.length === 0 ? outcome : scrubOutcome(outcome, secrets);
  }

  private async executeResolved(request: GatewayRequest, context: GatewayContext, ctx: ToolContext, secrets: string[]): Promise<CapabilityOutcome | undefined> {
    const registry = this.registry;
    try {
      const refs = credentialRefsOf(request);
      if (refs.credentialRef !== undefined || refs.connectionRef !== undefined) {
        if (!registry.credentials) return credentialUnresolved(request);
        const resolved = await registry.credentials({ ...refs, runId: request.runId, nodeId: request.nodeId });
        if (resolved.credential !== undefined) ctx.credential = resolved.credential;
        if (resolved.connection !== undefined) ctx.connection = resolved.connection;
        secrets.push(...secretStrings([resolved.credential, resolved.connection]));
      }
      switch (request.kind) {
        case 'tool': {
          const tool = this.tools.get(request.name);
          if (!tool) return { ok: false, error: { code: 'tool.not-registered', message: `no tool named ${JSON.stringify(request.name)} is registered in this host`, retryable: false } };
          if (!(await mayStartNow(context))) return undefined;
          return raceAbort(() => tool.execute(request.input, ctx), context, 'tool.error', secrets);
        }
        case 'agent': {
          const agent = this.agents.get(request.name);
          if (!agent) return { ok: false, error: { code: 'agent.not-registered', message: `no agent named ${JSON.stringify(request.name)} is registered in this host`, retryable: false } };
          const { credentialRef: _c, connectionRef: _n, ...config } = (request.config ?? {}) as { instructions?: string; outputSchema?: unknown; credentialRef?: string; connectionRef?: string };
          if (!(await mayStartNow(context))) return undefined;
          return raceAbort(() => agent.run(request.input, { ...ctx, ...config }), context, 'agent.error', secrets);
        }
        case 'model': {
          const model = registry.models?.[request.name];
          if (!model) return { ok: false, error: { code: 'model.not-registered', message: `no model named ${JSON.stringify(request.name)} is registered in this host`, retryable: false } };
          if (!(await mayStartNow(context))) return undefined;
          return raceAbort(() => generateTurn(model, request.input as ModelTurnInput, this.tools, registry.skills, ctx), context, 'model.error', secrets);
        }
        case 'node': {
          const { credentialRef: _c, connectionRef: _n, implementationDigest: pinned, ...config } = (request.config ?? {}) as Record<string, unknown>;
          const node = this.nodes.get(request.name);
          const present = node ? (node.implementationDigest ?? null) : undefined;
          // The run pinned an implementation: only that one may carry out its nodes.
          if (!node || !node.execute || present !== (pinned ?? null)) return implementationUnavailable(request.name, pinned, present, node !== undefined && !node.execute);
          if (!(await mayStartNow(context))) return undefined;
          const execute = node.execute;
          return raceAbort(() => execute(request.input, { ...ctx, config }), context, 'node.error', secrets);
        }
        case 'approval': {
          if (!registry.approvals) return undefined;
          const config = (request.config ?? {}) as { prompt?: string; approvers?: string[] };
          const decision = await registry.approvals({ runId: request.runId, nodeId: request.nodeId, invocationId: request.invocationId, input: request.input, ...config }, context);
          return decision === undefined ? undefined : { ok: true, output: { approved: decision.approved === true, by: String(decision.by), ...(decision.comment !== undefined ? { comment: decision.comment } : {}) } };
        }
        default:
          return { ok: false, error: { code: 'gateway.unknown-kind', message: `this host cannot carry out ${request.kind} requests`, retryable: false } };
      }
    } catch (err) {
      return outcomeOfThrown(err, `${request.kind}.error`);
    }
  }
}

/** A node whose pinned implementation this host does not have: refused, never carried out. */
function implementationUnavailable(uses: string, pinned: unknown, present: string | null | undefined, noExecute: boolean): CapabilityOutcome {
  const pinnedText = typeof pinned === 'string' ? pinned : 'no digest';
  const why = present === undefined ? 'this host has no such definition' : noExecute ? 'its definition here has no execute' : `this host has ${present ?? 'no digest'}`;
  return { ok: false, error: { code: 'node.implementation-unavailable', message: `node type ${uses}: the run pinned implementation ${pinnedText}, but ${why}`, retryable: false }, unavailable: true };
}

/** The opaque credential and connection references a node's config names, if any. */
export function credentialRefsOf(request: GatewayRequest): { credentialRef?: string; connectionRef?: string } {
  const { credentialRef, connectionRef } = (request.config ?? {}) as { credentialRef?: string; connectionRef?: string };
  return { ...(credentialRef !== undefined ? { credentialRef } : {}), ...(connectionRef !== undefined ? { connectionRef } : {}) };
}

/** The outcome of a call whose node names a credential reference that nothing here resolves. */
export function credentialUnresolved(request: GatewayRequest, why = 'this host has no credential resolver'): CapabilityOutcome {
  return { ok: false, error: { code: 'credential.unresolved', message: `node ${request.nodeId} names a credential reference, but ${why}`, retryable: false } };
}

/** A gateway that carries out every request through the registry, as soon as it is asked. */
export function registryGateway(registry: GatewayRegistry, nodes?: NodeImplementations): Gateway {
  const capabilities = new RegisteredCapabilities(registry, nodes);
  return {
    effects: () => capabilities.effects(),
    execute: (request, context) => capabilities.execute(request, context),
  };
}

// What a node kind is: one object per kind (engine/nodes/<kind>.ts), registered in one table
// (engine/nodes/index.ts). The compiler validates and plans with it, the runtime starts nodes
// and settles their calls through it; nothing else in the engine tests `uses`.
import type { Json } from '../json.js';
import type { CapabilityKind } from '../protocol/gateway.js';
import type { NodeSpec } from '../protocol/template.js';
import type { Effect, ErrorInfo } from '../protocol/index.js';
import type { Activation, Fact } from '../runtime/activation.js';
import type { Invocation } from '../state/types.js';

/** A node definition as plans pin it: the `config` schema, the capability, the implementation. */
export interface NodeDefinition {
  uses: string;
  configSchema: Json;
  /** The capability a node of this type asks the host for, if any. */
  capability?: CapabilityKind;
  /** Changes whenever the behaviour of the definition changes, so a pinned plan can tell. */
  implementationDigest: string;
}

export type NodeConfig = Record<string, any>;
export type WorkflowRef = { id: string; revision: number };
export type ValidationAdd = (code: string, pointer: string, message: string) => void;
export type SyntaxChecker = (source: string) => { message: string; line?: number } | undefined;
export type CallOutcome = { ok: true; output: Json } | { ok: false; error: ErrorInfo };

/** What a kind's own validation sees of one node. */
export interface NodeCheck {
  /** JSON pointer of the node in the template. */
  at: string;
  config: NodeConfig;
  inputs: Record<string, unknown>;
  add: ValidationAdd;
  checkSyntax: SyntaxChecker;
  /** The template's `spec.requires`. */
  allowed: readonly string[];
  /** The kind of a `uses`: the engine's, or one of the host's definitions the request carried. */
  kindOf(uses: string): NodeKind | undefined;
}

/**
 * How a node settles, as the runtime carries it out (engine/runtime/advance.ts): handed to the
 * kinds on the activation (`a.settle`), so that the kinds, which the runtime starts, do not
 * import the runtime back.
 */
export interface NodeSettlement {
  /** Validates and commits a node's output, then decides its outgoing edges. */
  commitOutput(a: Activation, id: string, output: Json, extraSchema?: Json): void;
  /** A node failed: retried when its policy allows, else the run fails. */
  failNode(a: Activation, id: string, error: ErrorInfo, options?: { unknownEffect?: boolean }): void;
  cancelInvocations(a: Activation, which: (inv: Invocation) => boolean, reason: string): void;
  isRetryable(a: Activation, error: ErrorInfo, retryOn: string[] | undefined, unknownEffect: boolean): boolean;
  /** Why an output fails the checks every output must pass (and `schema`), if it does. */
  outputProblem(output: Json, schema?: Json): string | undefined;
}

export interface NodeKind extends NodeDefinition {
  /** A short noun for messages (`condition`, `foreach`). */
  label: string;
  /** `start`: the one node where a run begins; `end`: a node where it may end. */
  role?: 'start' | 'end';
  /** The ports its outgoing edges must name; edges of a kind without ports name none. */
  ports?: readonly string[];
  /** The port an output leaves by (only for kinds with `ports`). */
  portOf?(output: Json): string;
  /** Its inputs may be bound to paths that are absent (a condition tests whether they exist). */
  inputsMayBeAbsent?: boolean;
  /** An output that fails its checks may be right on another attempt (a model's answer). */
  invalidOutputRetryable?: boolean;

  /** The capability its configuration implies, e.g. `tool:search`. */
  impliedCapability?(config: NodeConfig): string | undefined;
  /** Checks beyond the `config` schema; reports through `check.add`. */
  validate?(node: NodeSpec, check: NodeCheck): void;
  /** Templates a plan must pin because a node of this kind calls them. */
  calledWorkflows?(config: NodeConfig): WorkflowRef[];

  /** The effect class of its calls (kinds with a capability); `unknown` when absent. */
  effect?(config: NodeConfig): Effect;
  /** The gateway request's `name` and `config` (kinds with a capability). */
  request?(spec: NodeSpec, config: NodeConfig): { name: string; config: Record<string, Json> };
  /** Evaluates inside the engine, without the gateway (scripts); used for foreach items too. */
  evaluate?(a: Activation, config: NodeConfig, input: Json): CallOutcome;
  /** The call a node of this kind makes: itself, or a foreach's body. */
  callOf?(spec: NodeSpec): { uses: string; config: NodeConfig };

  /** What the runtime does when a node of this kind starts (attempt 1, a retry, a resolution). */
  start(a: Activation, spec: NodeSpec, attempt: number, timeoutAt: number | undefined): void;
  /** A call of this node came back (`capability.completed` is already journaled). */
  complete?(a: Activation, spec: NodeSpec, inv: Invocation, fact: Extract<Fact, { type: 'capability-completed' }>): void;
  /**
   * A call of this node whose effect is safe to repeat was in flight when the host restarted:
   * stage it again (or refuse it), and answer true. Absent or false: the node's one call is
   * requested again as it was.
   */
  reissue?(a: Activation, spec: NodeSpec, inv: Invocation): boolean;
  /**
   * An operator resolved a node of this kind that needed attention. Answers whether the kind
   * settled it itself; absent or false: the rule for a node's one call.
   */
  resolve?(a: Activation, spec: NodeSpec, resolution: string, output: Json, failure: string): boolean;
  /** The node passed its time limit (`effects-v2`); absent: the rule for a single call. */
  timeOut?(a: Activation, spec: NodeSpec, message: string): void;
}

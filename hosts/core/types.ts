// Plain types shared by every host: what the engine asks for and what comes back.

// The journal protocol is declared once, in engine/protocol/; hosts see JSON values they have
// not checked as `unknown`.
import type { ActivationRequest as ProtocolActivationRequest, Fact as ProtocolFact, GatewayRequest as ProtocolGatewayRequest, RunProjection as ProtocolRunProjection } from '../../engine/protocol/index.js';

export type {
  ActivationSummary,
  ArtifactRef,
  Authority,
  CapabilityError,
  CapabilityKind,
  CapabilityOutcome,
  CaptureMode,
  Effect,
  ErrorInfo,
  EventEnvelope,
  EventPayloads,
  EventType,
  ExecutionPlan,
  HostNodeDefinition,
  PinnedNodeDefinition,
  NodeStatus,
  PausedReason,
  PayloadOf,
  PlanTemplate,
  RunStatus,
  TerminalRunStatus,
} from '../../engine/protocol/index.js';
import { terminalRunStatuses } from '../../engine/protocol/index.js';

export { isTerminalStatus, terminalRunStatuses } from '../../engine/protocol/index.js';

export type GatewayRequest = ProtocolGatewayRequest<unknown>;
export type Fact = ProtocolFact<unknown>;
export type ActivationRequest = ProtocolActivationRequest<unknown>;

/**
 * A run's projection as a store keeps it (see engine/protocol/projection.ts): hosts, operators,
 * recovery and the replay page read it instead of the run's events. `status` is absent from
 * projections stored before it was part of them (the store's status column is authoritative).
 */
export type RunProjection = Omit<ProtocolRunProjection<unknown>, 'status'> & { status?: string };

/** The statuses after which a run never changes (`isTerminalStatus` answers the same). */
export const terminalStatuses: ReadonlySet<string> = new Set(terminalRunStatuses);

export interface ValidationReport {
  ok: boolean;
  errors: { code: string; pointer: string; message: string }[];
  semanticHash?: string;
}

/** Diagnostics of a host; never a source of facts. */
export interface HostLog {
  (level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
}

// Sub-workflow runs: a `workflow` request starts (or finds, or resumes) a child run whose run id
// is the request's invocation id; when the child ends, its outcome is delivered to the parent
// as the completion of that invocation. A cancelled invocation cancels the child.
import type { KernelError } from './kernel-errors.js';
import type { RunOutcome } from './projection.js';
import type { RunRecord } from './store.js';
import type { RunTraceIds } from './trace-context.js';
import { terminalStatuses, type ActivationSummary, type Authority, type ExecutionPlan, type Fact, type GatewayRequest, type HostLog } from './types.js';

/** What the kernel lends the children's bookkeeping. */
export interface ChildHost {
  log: HostLog;
  getRun(runId: string): Promise<RunRecord | undefined>;
  outcomeOf(record: RunRecord): Promise<RunOutcome>;
  planOf(runId: string): Promise<ExecutionPlan>;
  authority(context: { runId: string; workflowId: string; requested?: Authority; resuming?: boolean }): Authority | undefined;
  /** Whether this process activated the run (its in-flight work is known here). */
  knows(runId: string): boolean;
  launch(args: { runId: string; plan: ExecutionPlan; templateKey: string; input: unknown; authority: Authority; parentRunId: string; actor: string; correlation: unknown }): Promise<ActivationSummary>;
  /** The parent run's trace ids (from its first event's correlation), when the host derives them. */
  traceOf(runId: string): Promise<RunTraceIds | undefined>;
  resume(runId: string, by: string, authority: Authority | undefined): Promise<ActivationSummary>;
  deliver(runId: string, fact: Fact): Promise<ActivationSummary>;
}

export class ChildRuns {
  /** Child runs this process started or found, by child run id. */
  private readonly parents = new Map<string, { parentRunId: string }>();

  constructor(private readonly host: ChildHost) {}

  /** Carries out a `workflow` request. */
  start(request: GatewayRequest): void {
    this.startAsync(request).catch((err) => this.host.log('warn', `starting child ${request.invocationId} failed: ${(err as Error).message}`));
  }

  private async startAsync(request: GatewayRequest): Promise<void> {
    const childRunId = request.invocationId;
    this.parents.set(childRunId, { parentRunId: request.runId });
    const existing = await this.host.getRun(childRunId);
    if (existing) {
      if (terminalStatuses.has(existing.status)) {
        const outcome = await this.host.outcomeOf(existing);
        this.ended(childRunId, { runId: childRunId, status: outcome.status as ActivationSummary['status'], seq: outcome.seq, activation: 0, events: 0, result: outcome.output, error: outcome.error });
      } else if (!this.host.knows(childRunId)) {
        const authority = this.host.authority({ runId: childRunId, workflowId: request.name, resuming: true });
        this.host.resume(childRunId, 'parent', authority).catch((err) => this.host.log('warn', `resuming child ${childRunId} failed: ${(err as Error).message}`));
      }
      return;
    }
    const plan = await this.host.planOf(request.runId);
    // A child asks for its parent's authority of the moment: it never gets more than the parent.
    const authority = this.host.authority({ runId: childRunId, workflowId: request.name, ...(request.authority ? { requested: request.authority } : {}) });
    const correlation = await this.correlationOf(request);
    if (!authority) {
      this.parents.delete(childRunId);
      await this.host.deliver(request.runId, { type: 'capability-completed', invocationId: childRunId, ok: false, error: { code: 'authority.unresolved', message: `no authority resolves for child run ${childRunId}`, retryable: false } });
      return;
    }
    this.host.launch({ runId: childRunId, plan, templateKey: request.name, input: request.input, authority, parentRunId: request.runId, actor: 'parent', correlation }).catch((err) => {
      this.parents.delete(childRunId);
      const e = err as Partial<KernelError>;
      this.host.deliver(request.runId, { type: 'capability-completed', invocationId: childRunId, ok: false, error: { code: e.code ?? 'workflow.launch-failed', message: e.message ?? String(err), retryable: false } }).catch(() => undefined);
    });
  }

  /**
   * What a child run records about where it came from: the parent run, the node and invocation
   * whose `capability.requested` caused it, and the trace context of that call (the child's spans
   * are children of the parent's call span, in the parent's trace). Facts of the parent only.
   */
  private async correlationOf(request: GatewayRequest): Promise<unknown> {
    const causedBy = { runId: request.runId, nodeId: request.nodeId, invocationId: request.invocationId };
    let traceparent: string | undefined;
    try {
      traceparent = (await this.host.traceOf(request.runId))?.callTraceparent(request.invocationId);
    } catch (err) {
      this.host.log('warn', `the trace context of run ${request.runId} could not be read: ${(err as Error).message}`);
    }
    return { parentRunId: request.runId, causedBy, ...(traceparent ? { traceparent } : {}) };
  }

  /** A run ended: when it is a child, its parent learns how. */
  ended(runId: string, summary: ActivationSummary): void {
    const link = this.parents.get(runId);
    if (!link) return;
    this.parents.delete(runId);
    const fact: Fact =
      summary.status === 'completed'
        ? { type: 'capability-completed', invocationId: runId, ok: true, output: summary.result ?? null }
        : {
            type: 'capability-completed',
            invocationId: runId,
            ok: false,
            error: { code: summary.status === 'cancelled' ? 'workflow.child-cancelled' : 'workflow.child-failed', message: `child run ${runId} ${summary.status}${summary.error ? `: ${summary.error.message}` : ''}`, retryable: false },
          };
    this.host.deliver(link.parentRunId, fact).catch((err) => this.host.log('warn', `delivering the result of child ${runId} to ${link.parentRunId} failed: ${(err as Error).message}`));
  }

  /** The engine cancelled an invocation: when it is a child run, the child is cancelled. */
  cancel(invocationId: string, reason: string): void {
    if (!this.parents.has(invocationId)) return;
    this.host.deliver(invocationId, { type: 'cancel-requested', reason, by: 'parent' }).catch(() => undefined);
  }
}

// The router's side of the one operator interface (hosts/core/operator-api.ts): the same verbs
// and signatures as the Node SDK's, over a `RouterHost`. The router carries every run it holds
// on by itself, so `resume` of a running or paused run only follows it, and of a parked run
// (one that killed its processes) lets it be activated again (`unpark`).
import type { RunView } from '../core/host-runtime.js';
import type { RunOutcome } from '../core/kernel.js';
import { tracePage, type Operator, type OperatorDecision, type OperatorResolution, type TracePage } from '../core/operator-api.js';
import type { RunExport } from '../core/export-format.js';
import type { RunRecord } from '../core/store.js';
import type { RouterHost } from './runtime.js';

export class RouterOperator implements Operator {
  constructor(private readonly host: RouterHost) {}

  async getRun(runId: string): Promise<RunView> {
    return this.host.getRun(runId);
  }

  async listRuns(filter?: { statuses?: string[]; limit?: number }): Promise<RunRecord[]> {
    return this.host.listRuns(filter);
  }

  async readEvents(runId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<TracePage> {
    this.host.getRun(runId);
    return tracePage(this.host.store, runId, options);
  }

  async exportRun(runId: string): Promise<RunExport> {
    return this.host.exportRun(runId);
  }

  async approve(runId: string, nodeId: string, decision: OperatorDecision & { approved?: boolean }): Promise<RunOutcome> {
    await this.host.approve(runId, nodeId, decision);
    return this.host.getRun(runId);
  }

  reject(runId: string, nodeId: string, decision: OperatorDecision): Promise<RunOutcome> {
    return this.approve(runId, nodeId, { ...decision, approved: false });
  }

  async resolve(runId: string, nodeId: string, resolution: OperatorResolution): Promise<RunOutcome> {
    await this.host.resolve(runId, nodeId, resolution);
    return this.host.getRun(runId);
  }

  async cancel(runId: string, options: { reason?: string; by?: string } = {}): Promise<RunOutcome> {
    await this.host.cancel(runId, options.reason ?? 'cancelled');
    return this.host.getRun(runId);
  }

  async resume(runId: string, _options: { by?: string } = {}): Promise<{ runId: string; settled(): Promise<RunOutcome> }> {
    if (this.host.parkedRecord(runId)) this.host.unpark(runId);
    else this.host.getRun(runId);
    return this.host.follow(runId);
  }
}

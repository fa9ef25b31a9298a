// Cron triggers: launch a workflow on a schedule (croner). Each firing gets a run id derived from
// the trigger id and the scheduled time, so two processes over the same store, or a timer that
// fires twice, start one run per slot, never two.
import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { isPortableId } from '../../../engine/protocol/ids.js';
import type { HostLog } from '../../core/types.js';
import type { LaunchTarget, WorkflowRuntime } from '../runtime.js';
import { CodedError } from '../../../engine/protocol/coded-error.js';

export interface TriggerSpec {
  /** Portable id of the trigger. */
  id: string;
  /** Cron pattern (5 or 6 fields, croner syntax). */
  cron: string;
  timezone?: string;
  target: LaunchTarget;
  input?: unknown;
}

export class TriggerError extends CodedError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = 'TriggerError';
  }
}

/** The run id of one slot of one trigger: `t-<12 hex of the trigger id>-<scheduled ms, base 36>`. */
export function triggerRunId(triggerId: string, scheduledAt: Date): string {
  return `t-${createHash('sha256').update(triggerId).digest('hex').slice(0, 12)}-${scheduledAt.getTime().toString(36)}`;
}

interface Armed {
  spec: TriggerSpec;
  job: Cron;
  slot: Date | null;
}

export class TriggerScheduler {
  private readonly armed = new Map<string, Armed>();
  private readonly fired: { triggerId: string; runId: string; scheduledAt: string; started: boolean; error?: string }[] = [];

  constructor(
    private readonly runtime: WorkflowRuntime,
    private readonly log: HostLog = () => undefined,
  ) {}

  /** Arms a trigger; a bad pattern or a duplicate id is refused with a typed error. */
  add(spec: TriggerSpec): void {
    if (!isPortableId(spec.id)) throw new TriggerError('trigger.bad-id', `trigger id ${JSON.stringify(spec.id)} is not a portable id`);
    if (this.armed.has(spec.id)) throw new TriggerError('trigger.exists', `trigger ${spec.id} is already armed`);
    let job: Cron;
    try {
      job = new Cron(spec.cron, { timezone: spec.timezone, protect: true, paused: true });
    } catch (err) {
      throw new TriggerError('trigger.bad-cron', `trigger ${spec.id}: ${(err as Error).message}`);
    }
    const armed: Armed = { spec, job, slot: job.nextRun() };
    job.schedule(() => this.fire(armed));
    job.resume();
    this.armed.set(spec.id, armed);
  }

  private async fire(armed: Armed): Promise<void> {
    const slot = armed.slot ?? new Date(Math.floor(Date.now() / 1000) * 1000);
    armed.slot = armed.job.nextRun();
    const runId = triggerRunId(armed.spec.id, slot);
    const record = { triggerId: armed.spec.id, runId, scheduledAt: slot.toISOString(), started: false } as (typeof this.fired)[number];
    this.fired.push(record);
    if (this.fired.length > 1000) this.fired.shift();
    if (await this.runtime.store.getRun(runId)) return;
    try {
      // Into the durable queue: a worker of the store runs it; one run per slot whoever fires it.
      await this.runtime.launch(armed.spec.target, { runId, executionMode: 'background', actor: 'trigger', input: armed.spec.input ?? {}, correlation: { trigger: armed.spec.id, scheduledAt: slot.toISOString() } });
      record.started = true;
    } catch (err) {
      const e = err as { code?: string; message?: string };
      // Another process took this slot first: that is the guarantee, not a failure.
      if (e.code === 'store.conflict' || e.code === 'engine.run-exists' || e.code === 'run.exists') return;
      record.error = `${e.code ?? 'error'}: ${e.message ?? String(err)}`;
      this.log('warn', `trigger ${armed.spec.id} could not start run ${runId}: ${record.error}`);
    }
  }

  remove(id: string): boolean {
    const armed = this.armed.get(id);
    armed?.job.stop();
    return this.armed.delete(id);
  }

  /** Armed triggers with their next scheduled time, and the recent firings. */
  list(): { triggers: { id: string; cron: string; nextRun: string | null }[]; fired: { triggerId: string; runId: string; scheduledAt: string; started: boolean; error?: string }[] } {
    return {
      triggers: [...this.armed.values()].map((a) => ({ id: a.spec.id, cron: a.spec.cron, nextRun: a.job.nextRun()?.toISOString() ?? null })),
      fired: [...this.fired],
    };
  }

  stop(): void {
    for (const a of this.armed.values()) a.job.stop();
    this.armed.clear();
  }
}

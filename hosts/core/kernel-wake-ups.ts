// The kernel's wake-ups: the next time each run wants an activation without a new fact (the
// `wakeAt` of its projection). With timers, a run is woken by its own timer; without (the
// router's cadence), the host asks for the runs that are due and wakes them itself.
import { terminalStatuses, type ActivationSummary } from './types.js';

/** The longest delay `setTimeout` takes (about 24.8 days); a later wake-up is re-armed when it fires. */
const timerDelayMsMax = 2_147_000_000;

export interface WakeUpHost {
  now(): number;
  /** Delivers the timer's `resume-requested` fact to the run. */
  wake(runId: string): void;
}

export class WakeUps {
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly wakeAts = new Map<string, number>();
  private stopped = false;

  /** `useTimers`: false when the host drives time itself (`due`). */
  constructor(
    private readonly host: WakeUpHost,
    private readonly useTimers: boolean,
  ) {}

  /** Forgets a run's wake-up. */
  disarm(runId: string): void {
    const previous = this.timers.get(runId);
    if (previous) clearTimeout(previous);
    this.timers.delete(runId);
    this.wakeAts.delete(runId);
  }

  /** Arms the wake-up a committed activation asked for (none for a terminal run). */
  arm(runId: string, summary: ActivationSummary): void {
    this.disarm(runId);
    if (summary.wakeAt === undefined || terminalStatuses.has(summary.status)) return;
    this.wakeAts.set(runId, summary.wakeAt);
    if (!this.useTimers || this.stopped) return;
    const delay = Math.max(0, summary.wakeAt - this.host.now());
    this.timers.set(
      runId,
      setTimeout(() => {
        this.timers.delete(runId);
        this.wakeAts.delete(runId);
        this.host.wake(runId);
      }, Math.min(delay, timerDelayMsMax)),
    );
  }

  /** Runs whose wake-up time has come, at most `limit` of them. */
  due(limit: number): string[] {
    const now = this.host.now();
    const due: string[] = [];
    for (const [runId, at] of this.wakeAts) {
      if (at <= now) due.push(runId);
      if (due.length >= limit) break;
    }
    return due;
  }

  /** The earliest wake-up time armed (ms, run clock), `undefined` when none is. */
  next(): number | undefined {
    let next: number | undefined;
    for (const at of this.wakeAts.values()) if (next === undefined || at < next) next = at;
    return next;
  }

  /** Takes a run's wake-up off the list: the host is waking it now. */
  taken(runId: string): void {
    this.wakeAts.delete(runId);
  }

  /** Stops every timer; nothing is armed afterwards. */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}

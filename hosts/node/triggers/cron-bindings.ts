// Cron on the catalog: `serve` arms the published cron bindings of its store (croner) and reads
// the catalog again every `refreshMs` for new or disabled ones. Each slot of a binding revision
// is one event of the trigger pipeline, with the source event id `slot:<ISO time>`, so any number
// of workers firing one slot make one run (dedupe), and every slot ends up in the ingress
// journal as `launched` or `missed`.
//
// Which slots are due, and what becomes of them:
//
//   when                    slots considered                           handled as
//   a live firing           after the cursor, up to now                the latest launched on time, the others missed slots
//   arming (serve starts)   after the cursor, up to now - armGraceMs   missed slots, all of them
//
// (A slot within armGraceMs of an arming is left to the live firing of a worker that may already
// serve; if none does, the next live firing handles it as a missed slot.)
//
// The cursor is the latest slot recorded for the binding revision (its publication time when
// none is). Missed slots follow the binding's misfire policy:
//
//   policy     missed slots run late (reason_code trigger.misfire)   the rest
//   skip       none                                                  recorded `missed`
//   run-once   the first of each group                               recorded `missed`
//   run-all    the first `bound` of each group (default 10)          recorded `missed`
//
// A group is a run of consecutive slots that passed while no worker served. Its first slots (not
// its latest) are the ones run, so that the choice is the same whichever worker makes it and
// however the group is split between an arming and the next live firing.
import { Cron } from 'croner';
import type { CronConfig, WorkflowBinding } from './bindings.js';
import { TriggerRejected, type TriggerPipeline } from './ingress.js';
import { triggerLimits } from '../limits.js';
import type { TriggerHost } from './trigger-host.js';

export interface CronBindingOptions {
  /** How often the catalog is read for new, changed or disabled cron bindings (default 5 s). */
  refreshMs?: number;
  /** At arming, a slot this close to the clock is left to the live firing of a worker already serving (default 1 s). */
  armGraceMs?: number;
  log?: (level: string, message: string) => void;
}

const runAllBoundDefault = 10;
/** The reason code of a missed slot, and of a slot its misfire policy ran late. */
const misfireCode = 'trigger.misfire';

interface Armed {
  binding: WorkflowBinding;
  job: Cron;
  /** Work on this binding runs one step at a time. */
  chain: Promise<void>;
}

export const slotEventId = (at: number): string => `slot:${new Date(at).toISOString()}`;

export class CronBindingScheduler {
  private readonly armed = new Map<string, Armed>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly log: (level: string, message: string) => void;

  constructor(
    private readonly rt: TriggerHost,
    private readonly pipeline: TriggerPipeline,
    private readonly options: CronBindingOptions = {},
  ) {
    this.log = options.log ?? (() => undefined);
  }

  /** Arms every active cron binding, then follows the catalog. */
  async start(): Promise<void> {
    await this.refresh();
    const every = this.options.refreshMs ?? 5000;
    this.timer = setInterval(() => void this.refresh().catch((err) => this.log('warn', `cron bindings: ${(err as Error).message}`)), every);
    this.timer.unref();
  }

  /** Arms new active revisions and disarms revisions no longer active. */
  async refresh(): Promise<void> {
    if (this.stopped) return;
    const active = await this.rt.bindings.activeOf('cron');
    const wanted = new Map(active.map((b) => [`${b.id}@${b.revision}`, b]));
    for (const [key, a] of this.armed) {
      if (!wanted.has(key)) {
        a.job.stop();
        this.armed.delete(key);
      }
    }
    for (const [key, binding] of wanted) if (!this.armed.has(key)) this.arm(key, binding);
  }

  private arm(key: string, binding: WorkflowBinding): void {
    const config = binding.config as CronConfig;
    let job: Cron;
    try {
      job = new Cron(config.pattern, { timezone: config.timezone ?? 'UTC', paused: true });
    } catch (err) {
      this.log('warn', `cron binding ${key}: bad pattern ${JSON.stringify(config.pattern)}: ${(err as Error).message}`);
      return;
    }
    const armed: Armed = { binding, job, chain: Promise.resolve() };
    this.armed.set(key, armed);
    const armedAt = this.rt.kernel.now();
    this.step(armed, () => this.process(armed, armedAt - (this.options.armGraceMs ?? 1000), false));
    job.schedule(() => this.step(armed, () => this.process(armed, this.rt.kernel.now() + 250, true)));
    job.resume();
  }

  private step(armed: Armed, fn: () => Promise<void>): void {
    armed.chain = armed.chain.then(fn).catch((err) => this.log('warn', `cron binding ${armed.binding.id}@${armed.binding.revision}: ${(err as Error).message}`));
  }

  /**
   * Slots after the cursor up to `until`; the latest is run when `live`, the others are missed
   * slots. Missed slots form groups (consecutive slots that passed while no worker served); of a
   * group, the first `quota` run late (1 for run-once, `bound` for run-all, 0 for skip) and the rest
   * are recorded missed. A group handled in two steps (arming left its last slot to a live firing,
   * or two workers armed at once) continues the count from the records before it, so the decision
   * for a slot does not depend on which worker makes it, or when.
   */
  private async process(armed: Armed, until: number, live: boolean): Promise<void> {
    if (this.stopped) return;
    const b = armed.binding;
    const misfire = (b.config as CronConfig).misfire ?? { policy: 'skip' as const };
    const quota = misfire.policy === 'skip' ? 0 : misfire.policy === 'run-once' ? 1 : (misfire.bound ?? runAllBoundDefault);
    // One read: the cursor and the group the next missed slot continues, from the same snapshot.
    const window = triggerLimits.cronRunAllBoundMax + 1;
    const recent = await this.rt.triggerStorage.recentSlots(this.pipeline.deployment, b.id, b.revision, window);
    const cursor = recent[0]?.occurredAt ?? b.publishedAt ?? b.createdAt;
    let ranLate = 0;
    let inGroup = 0;
    for (const r of recent) {
      if (r.reasonCode !== misfireCode) break;
      inGroup++;
      if (r.status === 'launched') ranLate++;
    }
    // A group longer than the window is longer than any quota: its quota was used at its start.
    if (inGroup === window) ranLate = quota;
    const slots: number[] = [];
    let d: Date | null = new Date(cursor);
    while (slots.length < triggerLimits.cronMissedSlotsMax && (d = armed.job.nextRun(d)) !== null && d.getTime() <= until) slots.push(d.getTime());
    if (slots.length === 0) return;
    const current = live ? slots.pop() : undefined;
    for (const slot of slots) {
      const iso = new Date(slot).toISOString();
      if (ranLate < quota) {
        ranLate++;
        await this.launch(b, slot, { code: misfireCode, message: `late: slot ${iso} passed while no worker served; misfire policy ${misfire.policy}` });
      } else await this.pipeline.missed(b, { sourceEventId: slotEventId(slot), occurredAt: slot }, `slot ${iso} passed while no worker served; misfire policy ${misfire.policy}`);
    }
    if (current !== undefined) await this.launch(b, current);
  }

  /** Runs a slot; `late` (why it runs after its time) is kept on its `launched` record. */
  private async launch(binding: WorkflowBinding, slot: number, late?: { code: string; message: string }): Promise<void> {
    const iso = new Date(slot).toISOString();
    try {
      await this.pipeline.admit(binding, { source: 'cron', sourceEventId: slotEventId(slot), occurredAt: slot, caller: 'cron', payload: { slot: iso, scheduledAt: slot, late: late !== undefined, bindingId: binding.id } }, { recordDuplicate: false, ...(late !== undefined ? { note: late } : {}) });
    } catch (err) {
      // Recorded `rejected` by the pipeline; the slot counts as handled.
      if (err instanceof TriggerRejected) this.log('warn', `cron binding ${binding.id}@${binding.revision}: slot ${iso}: ${err.code}: ${err.message}`);
      else throw err;
    }
  }

  /** Armed bindings with their next slot. */
  list(): { binding: string; pattern: string; nextRun: string | null }[] {
    return [...this.armed.entries()].map(([key, a]) => ({ binding: key, pattern: (a.binding.config as CronConfig).pattern, nextRun: a.job.nextRun()?.toISOString() ?? null }));
  }

  /** Disarms everything and waits for work in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const a of this.armed.values()) a.job.stop();
    await Promise.all([...this.armed.values()].map((a) => a.chain));
    this.armed.clear();
  }
}

// One background loop of passes over a store (claiming queued runs, sending deliveries): a pass at
// a time, the next one at once when the last found work or someone woke the loop during it, else
// after the idle interval. Stopping waits for the pass in progress.
import { nextTurn } from './kernel-scheduler.js';

export class PollLoop {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<void> | undefined;
  private wanted = false;
  /** A pass is due on the next turn of the event loop. */
  private immediate = false;
  private stopped = true;

  /** `pass` answers whether it found work (then the next pass follows at once). */
  constructor(
    private readonly pass: () => Promise<boolean>,
    private readonly idleMs: number,
  ) {}

  get active(): boolean {
    return !this.stopped;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** A pass now rather than at the next poll (or right after the one under way). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.wanted = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    const run = () => {
      this.timer = undefined;
      this.immediate = false;
      if (this.stopped) return;
      this.wanted = false;
      this.running = this.pass().then(
        (found) => this.next(found),
        () => this.next(false),
      );
    };
    // A pass wanted now runs on the next turn of the event loop, not after a timer's minimum (1 ms in Node).
    if (ms > 0) this.timer = setTimeout(run, ms);
    else if (!this.immediate) {
      this.immediate = true;
      nextTurn(run);
    }
  }

  private next(found: boolean): void {
    this.running = undefined;
    this.schedule(found || this.wanted ? 0 : this.idleMs);
  }
}

// One background loop of passes over a store (claiming queued runs, sending deliveries): a pass at
// a time, the next one at once when the last found work or someone woke the loop during it, else
// after the idle interval. Stopping waits for the pass in progress.

export class PollLoop {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<void> | undefined;
  private wanted = false;
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
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.wanted = false;
      this.running = this.pass().then(
        (found) => this.next(found),
        () => this.next(false),
      );
    }, ms);
  }

  private next(found: boolean): void {
    this.running = undefined;
    this.schedule(found || this.wanted ? 0 : this.idleMs);
  }
}

// Requests refused before their sender was authenticated cost whoever sends them nothing, so they
// must not cost the store a row each: the sampler lets one record through per (source, binding,
// code) and window, and counts the rest. Storage then grows with time and with the number of
// bindings, never with the number of requests (docs/triggers.md, "What is recorded").
import { triggerLimits } from '../limits.js';

export class RejectSampler {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly windowMs: number = triggerLimits.unauthenticatedRejectWindowMs,
    private readonly keysMax: number = triggerLimits.unauthenticatedRejectKeysMax,
  ) {}

  /**
   * Whether this refusal is recorded; when it is, how many of the same key were not since the
   * previous record (to say so in the record).
   */
  admit(key: string, now: number): { record: boolean; suppressed: number } {
    const seen = this.last.get(key);
    if (seen && now - seen.at < this.windowMs) {
      seen.suppressed += 1;
      return { record: false, suppressed: seen.suppressed };
    }
    // A flood of distinct unknown binding ids must not grow the map either.
    if (!seen && this.last.size >= this.keysMax) this.last.clear();
    const suppressed = seen?.suppressed ?? 0;
    this.last.set(key, { at: now, suppressed: 0 });
    return { record: true, suppressed };
  }
}

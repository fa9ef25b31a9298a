// Scrubbing of resolved secrets from what a call returns. A tool that puts its credential into an
// error message (`auth failed for token sk-live-…`) or its output would otherwise have it
// journaled verbatim: in `capability.completed`, the node's error, the run's error, checkpoints
// and exports. The gateway replaces every occurrence before the outcome reaches the kernel.
import type { CapabilityOutcome } from './types.js';

/** Shorter strings are not scrubbed: they would redact ordinary words and digits. */
export const secretCharsMin = 4;
export const redactedMark = '[redacted]';
/** Depth bound of the walk over resolved values and outputs (deeper parts are left as they are). */
const depthMax = 64;

/** Every string of at least `secretCharsMin` characters in the resolved values, longest first. */
export function secretStrings(values: unknown[]): string[] {
  const out = new Set<string>();
  const walk = (v: unknown, depth: number) => {
    if (typeof v === 'string') {
      if (v.length >= secretCharsMin) out.add(v);
    } else if (v !== null && typeof v === 'object' && depth < depthMax) {
      for (const x of Array.isArray(v) ? v : Object.values(v as Record<string, unknown>)) walk(x, depth + 1);
    }
  };
  for (const v of values) walk(v, 0);
  // Longest first, so a secret that contains another one is replaced whole.
  return [...out].sort((x, y) => y.length - x.length);
}

export function scrubText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(redactedMark);
  return out;
}

/** A copy of a JSON-like value with every secret replaced, in string values and in keys. */
export function scrubValue(value: unknown, secrets: readonly string[], depth = 0): unknown {
  if (typeof value === 'string') return scrubText(value, secrets);
  if (value === null || typeof value !== 'object' || depth >= depthMax) return value;
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, secrets, depth + 1));
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return scrubValue(JSON.parse(JSON.stringify(value)), secrets, depth);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[scrubText(k, secrets)] = scrubValue(v, secrets, depth + 1);
  return out;
}

/** The outcome with every secret replaced by `[redacted]`: output, error code and message. */
export function scrubOutcome(outcome: CapabilityOutcome, secrets: readonly string[]): CapabilityOutcome {
  if (outcome.ok) return { ok: true, output: scrubValue(outcome.output, secrets) };
  const e = outcome.error;
  return { ok: false, error: { ...e, code: scrubText(e.code, secrets), message: scrubText(e.message, secrets) } };
}

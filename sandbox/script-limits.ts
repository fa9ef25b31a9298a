/** Per-evaluation limits of the script sandbox and their validation. */
import { scriptError, type ScriptError } from './errors.js';
import type { ScriptLimits } from '../engine/limits.js';
import * as L from './limits.js';

export type { ScriptLimits };

export const defaultScriptLimits: Readonly<ScriptLimits> = Object.freeze({
  fuel: L.fuelDefault,
  memoryBytes: L.memoryBytesDefault,
  stackBytes: L.stackBytesDefault,
  outputBytes: L.outputBytesDefault,
});

const limitRanges: Record<keyof ScriptLimits, readonly [number, number]> = {
  fuel: [1, L.fuelMax],
  memoryBytes: [L.memoryBytesMin, L.memoryBytesMax],
  stackBytes: [L.stackBytesMin, L.stackBytesMax],
  outputBytes: [1, L.outputBytesMax],
};

/** Applies `requested` over `base`; every field must be an integer inside its range. */
export function resolveScriptLimits(base: ScriptLimits, requested?: Partial<ScriptLimits>): ScriptLimits | ScriptError {
  const out = { ...base };
  if (requested === undefined) return out;
  if (requested === null || typeof requested !== 'object') return scriptError('script.request-invalid', 'limits must be an object');
  for (const key of Object.keys(requested)) {
    if (!Object.hasOwn(limitRanges, key)) return scriptError('script.request-invalid', `unknown limit '${key}'`);
    const value = (requested as Record<string, unknown>)[key];
    if (value === undefined) continue;
    const [min, max] = limitRanges[key as keyof ScriptLimits];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      return scriptError('script.request-invalid', `limit '${key}' must be an integer from ${min} to ${max}`);
    }
    out[key as keyof ScriptLimits] = value;
  }
  return out;
}

export function isScriptError(x: ScriptLimits | ScriptError): x is ScriptError {
  return typeof (x as ScriptError).code === 'string';
}


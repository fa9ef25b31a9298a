/**
 * Wire format of the script evaluation service.
 *
 * POST /v1/evaluate, body (application/json):
 *   { "source": string, "input"?: any JSON value, "inputJson"?: string, "limits"?: Partial<ScriptLimits> }
 * `inputJson` passes the input as exact JSON text (what the in-process
 * evaluator takes); `input` is the convenient form and is re-serialised by
 * the service. Give one or neither (neither means null).
 *
 * 200 with an evaluation outcome:
 *   {"ok":true,"fuelUsed":N,"output":<the script's output JSON, byte for byte>}
 *   {"ok":false,"error":{"code":"script....","message":"...","line":N}}
 * The success body is written in exactly this member order, and `output` is
 * always last, so a client can take the output bytes without re-serialising.
 *
 * Other statuses carry {"ok":false,"error":{"code":"service....","message":"..."}}.
 */
import type { ScriptError } from '../errors.js';
import type { ScriptLimits, ScriptOutcome } from '../evaluator.js';
import { scanJsonText } from '../json-text.js';
import * as L from '../limits.js';

export const serviceErrorCodes = [
  'service.request-invalid',
  'service.limit-exceeded',
  'service.input-invalid',
  'service.overloaded',
  'service.unauthorized',
  'service.not-found',
  'service.method-not-allowed',
  'service.unsupported-media-type',
  'service.body-too-large',
  'service.queue-full',
  'service.shutting-down',
  'service.worker-failure',
] as const;
export type ServiceErrorCode = (typeof serviceErrorCodes)[number];

export interface ServiceFailure {
  status: number;
  code: ServiceErrorCode;
  message: string;
}

export interface EvaluateJob {
  source: string;
  inputJson: string;
  limits: ScriptLimits;
}

const limitKeys: readonly (keyof ScriptLimits)[] = ['fuel', 'memoryBytes', 'stackBytes', 'outputBytes'];

/**
 * Validates a request body. Limits the caller leaves out take `defaults`;
 * a limit above the server's `maxima` is refused rather than silently
 * lowered, because a lower limit could change the outcome.
 */
export function parseEvaluateRequest(bodyText: string, defaults: ScriptLimits, maxima: ScriptLimits): EvaluateJob | ServiceFailure {
  // Only `input` can nest: bound it before JSON.parse and JSON.stringify recurse
  // over it (the body object adds one level), and refuse numbers JSON cannot
  // carry back (1e999 would become null when re-serialised).
  const problem = scanJsonText(bodyText, L.inputDepthMax + 1);
  if (problem?.reason === 'too-deep') return inputInvalid(`input is nested deeper than ${L.inputDepthMax} levels`);
  if (problem?.reason === 'non-finite') return inputInvalid(problem.detail.replace('input holds', 'the request holds'));
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    return invalid('body is not JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return invalid('body must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    if (key !== 'source' && key !== 'input' && key !== 'inputJson' && key !== 'limits') return invalid(`unknown member '${key}'`);
  }
  if (typeof b.source !== 'string') return invalid("'source' must be a string");
  if (b.input !== undefined && b.inputJson !== undefined) return invalid("give 'input' or 'inputJson', not both");
  let inputJson: string;
  if (b.inputJson !== undefined) {
    if (typeof b.inputJson !== 'string') return invalid("'inputJson' must be a string of JSON text");
    inputJson = b.inputJson;
  } else inputJson = JSON.stringify(b.input ?? null);
  const limits: ScriptLimits = { ...defaults };
  if (b.limits !== undefined) {
    if (b.limits === null || typeof b.limits !== 'object' || Array.isArray(b.limits)) return invalid("'limits' must be an object");
    const requested = b.limits as Record<string, unknown>;
    for (const key of Object.keys(requested)) {
      if (!limitKeys.includes(key as keyof ScriptLimits)) return invalid(`unknown limit '${key}'`);
      const value = requested[key];
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) return invalid(`limit '${key}' must be a positive integer`);
      const max = maxima[key as keyof ScriptLimits];
      if (value > max) {
        return { status: 400, code: 'service.limit-exceeded', message: `limit '${key}' is above this service's maximum of ${max}` };
      }
      limits[key as keyof ScriptLimits] = value;
    }
  }
  return { source: b.source, inputJson, limits };
}

function inputInvalid(message: string): ServiceFailure {
  return { status: 400, code: 'service.input-invalid', message };
}

function invalid(message: string): ServiceFailure {
  return { status: 400, code: 'service.request-invalid', message };
}

/** Serialises an outcome in the fixed member order described above. */
export function formatOutcome(outcome: ScriptOutcome): string {
  if (outcome.ok) return `{"ok":true,"fuelUsed":${outcome.fuelUsed},"output":${outcome.output}}`;
  return JSON.stringify({ ok: false, error: outcome.error });
}

export function formatFailure(failure: Pick<ServiceFailure, 'code' | 'message'>): string {
  return JSON.stringify({ ok: false, error: { code: failure.code, message: failure.message } });
}

const successPrefix = /^\{"ok":true,"fuelUsed":(\d+),"output":/;

/** Inverse of formatOutcome; returns undefined when the body is not in the fixed format. */
export function parseOutcome(bodyText: string): ScriptOutcome | undefined {
  const m = successPrefix.exec(bodyText);
  if (m) {
    if (!bodyText.endsWith('}')) return undefined;
    return { ok: true, fuelUsed: Number(m[1]), output: bodyText.slice(m[0].length, -1) };
  }
  try {
    const parsed = JSON.parse(bodyText) as { ok?: unknown; error?: ScriptError };
    if (parsed.ok === false && parsed.error && typeof parsed.error.code === 'string' && typeof parsed.error.message === 'string') {
      return { ok: false, error: parsed.error };
    }
  } catch {
    // fall through
  }
  return undefined;
}

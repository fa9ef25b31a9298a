/**
 * Stable error codes of the script sandbox. Codes are part of the contract:
 * the same script and input give the same code on every host and every run.
 */
export const scriptErrorCodes = [
  /** The source does not parse (as an expression or as a function body). */
  'script.syntax',
  /** The script threw (or a built-in threw on its behalf). */
  'script.runtime',
  /** The script used a capability scripts do not have (Date, Math.random, eval, Function). */
  'script.forbidden',
  /** The fuel budget ran out (interrupt-handler calls). */
  'script.fuel',
  /** The wall-clock failsafe ended the evaluation (fuel failed to; not deterministic, see limits.ts). */
  'script.wall-time',
  /** The QuickJS heap limit was reached (or a string/array grew past its engine limit). */
  'script.memory',
  /** The QuickJS stack limit was reached. */
  'script.stack',
  /** The output JSON is larger than the output byte limit or nested deeper than allowed. */
  'script.output-too-large',
  /** The result is not JSON: undefined, a function, a symbol, a cycle, a non-finite number, a non-plain object, an accessor. */
  'script.not-json',
  /** The input is not valid JSON text, or too large, or too deep, or holds a non-finite number. */
  'script.input-invalid',
  /** The source nests brackets deeper than sourceDepthMax (refused before parsing). */
  'script.too-deep',
  /** The source is too long, or the limits asked for are out of range. */
  'script.request-invalid',
  /** The sandbox itself failed (the module was discarded); retrying may succeed. */
  'script.sandbox-failure',
] as const;

export type ScriptErrorCode = (typeof scriptErrorCodes)[number];

export interface ScriptError {
  code: ScriptErrorCode | (string & {});
  message: string;
  /** 1-based line in the script's own source, when known. */
  line?: number;
}

export function scriptError(code: ScriptErrorCode, message: string, line?: number): ScriptError {
  return line === undefined ? { code, message } : { code, message, line };
}

/** Error codes after which the QuickJS runtime must not be reused. */
export const runtimePoisoningCodes: ReadonlySet<string> = new Set(['script.memory', 'script.stack']);

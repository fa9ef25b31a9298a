// Checks a caller's value before it crosses into the engine. Serialising a value that is not
// JSON (a cycle, a BigInt) or that is nested so deep that the engine's parser runs out of stack
// fails inside the engine call, which is a trap: the instance is discarded with every hot run in
// it. Bad input is refused here instead, with a typed error and the path of the first problem.

/** Bounds of values that cross the boundary; each matches or stays under the engine's own. */
export const jsonInputLimits = {
  /** The engine's `runInputBytesMax` (characters of the input's JSON text). */
  runInputBytesMax: 1_048_576,
  /** The engine refuses a run input nested deeper than its `nodeOutputDepthMax`. */
  runInputDepthMax: 64,
  /**
   * Measured: the QuickJS engine compiles a template nested 128 levels deep and traps with
   * "Maximum call stack size exceeded" at 160; half the last good depth leaves room for the
   * plan that wraps the template.
   */
  templateDepthMax: 64,
} as const;
import { CodedError } from '../../engine/protocol/coded-error.js';

/** A value the engine must not be given; `code` is stable, `detail.pointer` names the place. */
export class JsonInputError extends CodedError {
  declare readonly detail: { pointer: string };

  constructor(code: string, message: string, pointer: string) {
    super(code, message, { pointer });
    this.name = 'JsonInputError';
  }
}

/** A JSON object: not null, not a list. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function escapeToken(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * Why `value` is not plain JSON within `depthMax`, or undefined. Plain JSON: null, booleans,
 * finite numbers, strings, arrays and objects whose prototype is Object.prototype or null.
 * An object property whose value is `undefined` is allowed (JSON.stringify leaves it out).
 * With `exactIntegers`, an integer beyond `Number.MAX_SAFE_INTEGER` is a problem too.
 */
export function jsonValueProblem(value: unknown, depthMax: number, options: { exactIntegers?: boolean } = {}): { pointer: string; problem: string } | undefined {
  const open = new Set<object>();
  const walk = (v: unknown, depth: number, pointer: string): { pointer: string; problem: string } | undefined => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return undefined;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return { pointer, problem: `${v} is not a JSON number` };
      // A JSON integer beyond 2^53-1 was (or will be) rounded by every JSON parser on the way:
      // 9007199254740993 arrives as ...992. Refused rather than kept wrong; a string keeps it.
      if (options.exactIntegers && Number.isInteger(v) && !Number.isSafeInteger(v)) return { pointer, problem: `the integer ${BigInt(v)} is beyond 2^53-1 and cannot be kept exactly as a JSON number (pass it as a string)` };
      return undefined;
    }
    if (typeof v !== 'object') return { pointer, problem: `${v === undefined ? 'undefined' : `a ${typeof v}`} is not JSON` };
    if (depth >= depthMax) return { pointer, problem: `nested deeper than ${depthMax} levels` };
    if (open.has(v)) return { pointer, problem: 'a cycle (the value contains itself)' };
    open.add(v);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const p = walk(v[i], depth + 1, `${pointer}/${i}`);
        if (p) return p;
      }
    } else {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return { pointer, problem: `a ${(proto?.constructor as { name?: string } | undefined)?.name ?? 'non-plain'} object is not JSON` };
      for (const key of Object.keys(v)) {
        const item = (v as Record<string, unknown>)[key];
        if (item === undefined) continue;
        const p = walk(item, depth + 1, `${pointer}/${escapeToken(key)}`);
        if (p) return p;
      }
    }
    open.delete(v);
    return undefined;
  };
  return walk(value, 0, '');
}

/** The deepest nesting of arrays and objects in a JSON text, without parsing it (no recursion). */
export function jsonTextDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

/**
 * Refuses a run input the engine must not be given: `run.input-invalid`. That includes integers
 * beyond 2^53-1, which no JSON number path (a CLI `--input` file, the HTTP API, MCP arguments)
 * can have delivered exactly: the input is refused instead of run with a rounded value.
 */
export function assertRunInput(input: unknown): void {
  const found = jsonValueProblem(input, jsonInputLimits.runInputDepthMax, { exactIntegers: true });
  if (found) throw new JsonInputError('run.input-invalid', `the run input is not plain JSON: ${found.problem} at ${found.pointer || '/'}`, found.pointer);
  const size = JSON.stringify(input).length;
  if (size > jsonInputLimits.runInputBytesMax) throw new JsonInputError('run.input-invalid', `the run input has ${size} characters of JSON (at most ${jsonInputLimits.runInputBytesMax})`, '');
}

/** Refuses a template (object or JSON text) the engine must not be given: `template.not-json`. */
export function assertTemplateJson(template: unknown): void {
  if (typeof template === 'string') {
    const depth = jsonTextDepth(template);
    if (depth > jsonInputLimits.templateDepthMax) throw new JsonInputError('template.not-json', `the template is nested ${depth} levels deep (at most ${jsonInputLimits.templateDepthMax})`, '');
    return;
  }
  const found = jsonValueProblem(template, jsonInputLimits.templateDepthMax);
  if (found) throw new JsonInputError('template.not-json', `the template is not plain JSON: ${found.problem} at ${found.pointer || '/'}`, found.pointer);
}

// Parsing a trigger's JSON body (or a binding file) without trusting its shape. `JSON.parse` of
// text nested 200,000 deep overflows the stack, and a value nested deeper than the engine takes,
// or a number such as `1e999` (parsed as Infinity), would only be refused later as a 500. So the
// nesting is measured first by one linear scan of the text (brackets outside strings), then the
// parsed value is checked for non-finite numbers; each refusal has its own code.
import { jsonValueProblem } from '../../core/json-input.js';

/** The deepest nesting of `[` / `{` in JSON text, counting outside strings; stops past `stopAbove`. */
export function jsonTextDepth(text: string, stopAbove: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

export type JsonBodyResult = { ok: true; value: unknown } | { ok: false; reason: 'bad-json' | 'too-deep' | 'bad-number'; message: string };

/** Parses `text` as JSON nested at most `depthMax` levels, with finite numbers only. */
export function parseJsonBody(text: string, depthMax: number): JsonBodyResult {
  if (jsonTextDepth(text, depthMax) > depthMax) return { ok: false, reason: 'too-deep', message: `the JSON is nested deeper than ${depthMax} levels` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: 'bad-json', message: `the body is not JSON: ${(err as Error).message}` };
  }
  // Depth is already bounded; this walk finds a number JSON.parse made Infinity.
  const problem = jsonValueProblem(value, depthMax + 1);
  if (problem) return { ok: false, reason: 'bad-number', message: `the JSON at ${problem.pointer || '/'} is out of range: ${problem.problem}` };
  return { ok: true, value };
}

/** Host-side checks on what goes into the guest and reading what comes back. */
import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten';
import { scriptError, type ScriptError } from './errors.js';
import { scanJsonText, utf8ByteLength } from './json-text.js';
import * as L from './limits.js';
import { scriptLineOffset } from './prelude.js';
import { sourceNestsDeeperThan } from './source-depth.js';

export function lineCount(source: string): number {
  let lines = 1;
  for (let i = source.indexOf('\n'); i !== -1; i = source.indexOf('\n', i + 1)) lines++;
  return lines;
}

export function checkSourceShape(source: unknown): ScriptError | undefined {
  if (typeof source !== 'string') return scriptError('script.request-invalid', 'source must be a string');
  if (source.length > L.sourceCharsMax) return scriptError('script.request-invalid', `source is longer than ${L.sourceCharsMax} characters`);
  if (sourceNestsDeeperThan(source, L.sourceDepthMax)) {
    return scriptError('script.too-deep', `source nests brackets deeper than ${L.sourceDepthMax} levels`);
  }
  return undefined;
}

export function checkInput(inputJson: unknown): ScriptError | undefined {
  if (typeof inputJson !== 'string') return scriptError('script.input-invalid', 'input must be JSON text');
  if (inputJson.length > L.inputBytesMax || utf8ByteLength(inputJson) > L.inputBytesMax) {
    return scriptError('script.input-invalid', `input is larger than ${L.inputBytesMax} bytes`);
  }
  const problem = scanJsonText(inputJson, L.inputDepthMax);
  return problem ? scriptError('script.input-invalid', problem.detail) : undefined;
}

export function readResult(
  context: QuickJSContext,
  value: QuickJSHandle,
  outputBytes: number,
  fuelUsed: number,
  sourceLines: number,
): { ok: true; output: string; fuelUsed: number } | { ok: false; error: ScriptError } {
  if (context.typeof(value) === 'string') {
    const output = context.getString(value);
    if (utf8ByteLength(output) > outputBytes) {
      return { ok: false, error: scriptError('script.output-too-large', `output is larger than ${outputBytes} bytes`) };
    }
    if (scanJsonText(output, L.outputDepthMax)?.reason === 'too-deep') {
      return { ok: false, error: scriptError('script.output-too-large', `output is nested deeper than ${L.outputDepthMax} levels`) };
    }
    return { ok: true, output, fuelUsed };
  }
  const code = context.getProp(value, 0).consume((h) => context.getString(h));
  const message = context.getProp(value, 1).consume((h) => context.getString(h));
  const rawLine = context.getProp(value, 2).consume((h) => context.getNumber(h));
  const error: ScriptError = { code, message };
  // An error at the end of the source is reported on the wrapper's closing line.
  if (rawLine > scriptLineOffset) error.line = Math.min(rawLine - scriptLineOffset, sourceLines);
  return { ok: false, error };
}

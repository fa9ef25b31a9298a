/**
 * Host-side checks on JSON text, written without Node built-ins so the
 * evaluator also runs in a browser bundle.
 */

/** UTF-8 byte length of a JS string (lone surrogates count as U+FFFD, 3 bytes). */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

export type JsonTextProblem = { reason: 'too-deep' | 'non-finite' | 'not-json'; detail: string };

/**
 * Scans JSON text for nesting depth and for number literals that parse to a
 * non-finite value (`1e999`). Syntax is checked by JSON.parse in the guest;
 * this only has to be exact on valid JSON.
 */
export function scanJsonText(text: string, depthMax: number): JsonTextProblem | undefined {
  let depth = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i += 2;
        else if (d === 0x22) break;
        else i++;
      }
      i++;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      depth++;
      if (depth > depthMax) return { reason: 'too-deep', detail: `input is nested deeper than ${depthMax} levels` };
      i++;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
      i++;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      let exponent = false;
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x65 || d === 0x45) exponent = true;
        else if (!((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x2b || d === 0x2d)) break;
        i++;
      }
      // Only an exponent or a very long literal can overflow a double.
      if ((exponent || i - start > 300) && !Number.isFinite(Number(text.slice(start, i)))) {
        return { reason: 'non-finite', detail: `input holds a number that is not finite: ${text.slice(start, Math.min(i, start + 40))}` };
      }
    } else i++;
  }
  return undefined;
}

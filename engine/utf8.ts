// UTF-8 codec for the guest. The QuickJS back-end has no TextEncoder/TextDecoder; JSON text is
// mostly ASCII, so both directions take an ASCII fast path.

export function utf8Encode(text: string): Uint8Array {
  const n = text.length;
  let ascii = true;
  for (let i = 0; i < n; i++) {
    if (text.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = text.charCodeAt(i);
    return out;
  }
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < n && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      c = 0x10000 + ((c - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00);
      out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    } else {
      // Lone surrogates are encoded as U+FFFD, like TextEncoder.
      if (c >= 0xd800 && c < 0xe000) c = 0xfffd;
      out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
  }
  return Uint8Array.from(out);
}

const chunkChars = 8192;

export function utf8Decode(bytes: Uint8Array): string {
  const n = bytes.length;
  let ascii = true;
  for (let i = 0; i < n; i++) {
    if (bytes[i] > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) {
    let s = '';
    for (let i = 0; i < n; i += chunkChars) {
      s += String.fromCharCode.apply(null, Array.from(bytes.subarray(i, Math.min(n, i + chunkChars))));
    }
    return s;
  }
  const codes: number[] = [];
  let s = '';
  for (let i = 0; i < n; ) {
    const c = bytes[i++];
    let cp: number;
    if (c < 0x80) cp = c;
    else if (c >= 0xc0 && c < 0xe0 && i < n) cp = ((c & 31) << 6) | (bytes[i++] & 63);
    else if (c >= 0xe0 && c < 0xf0 && i + 1 < n) cp = ((c & 15) << 12) | ((bytes[i++] & 63) << 6) | (bytes[i++] & 63);
    else if (c >= 0xf0 && i + 2 < n) cp = ((c & 7) << 18) | ((bytes[i++] & 63) << 12) | ((bytes[i++] & 63) << 6) | (bytes[i++] & 63);
    else cp = 0xfffd;
    if (cp > 0xffff) {
      cp -= 0x10000;
      codes.push(0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
    } else codes.push(cp);
    if (codes.length >= chunkChars) {
      s += String.fromCharCode.apply(null, codes);
      codes.length = 0;
    }
  }
  return s + String.fromCharCode.apply(null, codes);
}

/** Splits JSONL bytes into lines of text (JSON never contains a raw newline). */
export function splitLines(bytes: Uint8Array): string[] {
  if (bytes.length === 0) return [];
  return utf8Decode(bytes).split('\n').filter((line) => line.length > 0);
}

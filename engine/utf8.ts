// UTF-8 encoding for the guest's SHA-256 (semantic hashes). The QuickJS back-end has no
// TextEncoder; JSON text is mostly ASCII, so it takes an ASCII fast path. Payloads cross the
// boundary as strings and need no codec here.

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

/** The UTF-8 length of `text` in bytes (a lone surrogate counts as U+FFFD, as `utf8Encode` writes it). */
export function utf8Length(text: string): number {
  const n = text.length;
  let bytes = n;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < n && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 2;
      i++;
    } else bytes += 2;
  }
  return bytes;
}

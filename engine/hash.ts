import { sha256 } from '@noble/hashes/sha256';
import canonicalizeModule from 'canonicalize';

// canonicalize is CommonJS; take the function whichever way the bundler hands it over.
const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as unknown as (value: unknown) => string | undefined;
import { utf8Encode } from './utf8.js';

const hex = '0123456789abcdef';

function toHex(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += hex[bytes[i] >> 4] + hex[bytes[i] & 15];
  return s;
}

/** RFC 8785 canonical JSON text. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new Error('value cannot be canonicalized');
  return text;
}

export function sha256Hex(text: string): string {
  return toHex(sha256(utf8Encode(text)));
}

/** `sha256:<hex>` of the canonical JSON of a value. */
export function digestOf(value: unknown): string {
  return `sha256:${sha256Hex(canonicalJson(value))}`;
}

/** A short, portable, deterministic id: `<prefix>-<hex>` of at most 36 characters. */
export function derivedId(prefix: string, ...parts: (string | number)[]): string {
  const hexChars = 35 - prefix.length;
  return `${prefix}-${sha256Hex(parts.join('\u0000')).slice(0, hexChars)}`;
}

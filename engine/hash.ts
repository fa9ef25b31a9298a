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

/** SHA-256 in the engine's own JavaScript; the component uses the host's (`useSha256Hex`). */
function guestSha256Hex(text: string): string {
  return toHex(sha256(utf8Encode(text)));
}

let sha256HexOf: (text: string) => string = guestSha256Hex;

/** Hex of the SHA-256 of the UTF-8 bytes of `text`. */
export function sha256Hex(text: string): string {
  return sha256HexOf(text);
}

/**
 * Hands SHA-256 to a faster implementation with the same result: the component's entry point
 * installs the host's `digest.sha256` import, which runs natively rather than interpreted.
 */
export function useSha256Hex(fn: (text: string) => string): void {
  sha256HexOf = fn;
}

/** `sha256:<hex>` of the canonical JSON of a value. */
export function canonicalDigest(value: unknown): string {
  return `sha256:${sha256Hex(canonicalJson(value))}`;
}

/** 53 bits of a fast, non-cryptographic string hash (cyrb53), as 14 hex digits. */
function hash53(text: string, seed: number): string {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  const n = 4294967296 * (2097151 & h2) + (h1 >>> 0);
  return n.toString(16).padStart(14, '0');
}

/** Ids of plans without the `ids-v2` flag: SHA-256 of the parts (kept so old runs replay). */
export function derivedIdV1(prefix: string, ...parts: (string | number)[]): string {
  return `${prefix}-${sha256Hex(parts.join('\u0000')).slice(0, 35 - prefix.length)}`;
}

/**
 * A short, portable, deterministic id: `<prefix>-<hex>` of at most 36 characters. Ids only need
 * to be unique, not unguessable; a 106-bit non-cryptographic hash is enough and costs a fraction
 * of SHA-256 in the guest's interpreter.
 */
export function derivedId(prefix: string, ...parts: (string | number)[]): string {
  const text = parts.join('\u0000');
  return `${prefix}-${(hash53(text, 1) + hash53(text, 2)).slice(0, 35 - prefix.length)}`;
}

const runKeys = new Map<string, string>();

/** What every event id of a run starts with: a per-run key (hashed once) and `-`. */
export function eventIdPrefix(runId: string): string {
  let prefix = runKeys.get(runId);
  if (prefix === undefined) {
    prefix = `e${hash53(runId, 3)}${hash53(runId, 4).slice(0, 8)}-`;
    if (runKeys.size >= 1024) runKeys.delete(runKeys.keys().next().value as string);
    runKeys.set(runId, prefix);
  }
  return prefix;
}

/** Event ids: the run's prefix and the seq. */
export function eventId(runId: string, seq: number): string {
  return `${eventIdPrefix(runId)}${seq.toString(36)}`;
}

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
  const sorted = sortedCopy(value);
  const text = sorted === unsortable ? canonicalize(value) : JSON.stringify(sorted);
  if (text === undefined) throw new Error('value cannot be canonicalized');
  return text;
}

const unsortable = Symbol('unsortable');
/** A property name JavaScript orders before every other, by its numeric value (an array index). */
const arrayIndex = /^(?:0|[1-9][0-9]*)$/;

/**
 * A copy of a JSON value whose objects have their members in RFC 8785's order (UTF-16 code
 * units, what `sort()` compares), so that the interpreter's own `JSON.stringify` writes the
 * canonical text in one native pass: about twice as fast as `canonicalize` in the guest. Strings
 * and numbers are written by `JSON.stringify` in both, which is what RFC 8785 specifies for them.
 * Anything whose text `JSON.stringify` would not write in that order or form (an array-index
 * member name, which objects keep first and in numeric order; a `toJSON` method; a function; a
 * non-finite number; a hole in an array) answers `unsortable`, and `canonicalize` writes the
 * whole value instead (test/protocol/canonical-json.test.ts holds the two equal).
 */
function sortedCopy(value: unknown): unknown {
  if (value === null) return value;
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
    case 'symbol':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : unsortable;
    case 'object':
      break;
    default:
      return unsortable;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return unsortable;
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      // A hole (never in parsed JSON): `canonicalize` leaves it out, `JSON.stringify` writes null.
      if (!(i in value)) return unsortable;
      const v = sortedCopy(value[i]);
      if (v === unsortable) return unsortable;
      out[i] = v;
    }
    return out;
  }
  const keys = Object.keys(value as object).sort();
  // No prototype: a member named `__proto__` is then an own member like any other.
  const out: Record<string, unknown> = Object.create(null);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    // Most names start with a letter: the pattern runs only for those that start with a digit.
    const first = key.charCodeAt(0);
    if (first >= 48 && first <= 57 && arrayIndex.test(key)) return unsortable;
    const v = sortedCopy((value as Record<string, unknown>)[key]);
    if (v === unsortable) return unsortable;
    out[key] = v;
  }
  return out;
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

// cyrb53, a fast non-cryptographic string hash, for two seeds at once. Its state after a text
// depends only on that text, so the state after a prefix can be kept and continued: the ids of a
// run all start with the run id, and hashing it once per run instead of once per id cuts the
// interpreted loop (one iteration per character, the costliest part of an id in the guest) to
// the few characters after it, with the same result.

const imul = Math.imul;

/** The running states of the two seeds: [h1, h2] of the first, [h1, h2] of the second. */
type HashState = [number, number, number, number];

function startState(seedA: number, seedB: number): HashState {
  return [0xdeadbeef ^ seedA, 0x41c6ce57 ^ seedA, 0xdeadbeef ^ seedB, 0x41c6ce57 ^ seedB];
}

/** Continues `state` over `text`, in place. */
function absorb(state: HashState, text: string): HashState {
  let a1 = state[0];
  let a2 = state[1];
  let b1 = state[2];
  let b2 = state[3];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a1 = imul(a1 ^ c, 2654435761);
    a2 = imul(a2 ^ c, 1597334677);
    b1 = imul(b1 ^ c, 2654435761);
    b2 = imul(b2 ^ c, 1597334677);
  }
  state[0] = a1;
  state[1] = a2;
  state[2] = b1;
  state[3] = b2;
  return state;
}

/** 53 bits of the hash whose running state is (h1, h2), as 14 hex digits. */
function finish(h1: number, h2: number): string {
  const f1 = imul(h1 ^ (h1 >>> 16), 2246822507) ^ imul(h2 ^ (h2 >>> 13), 3266489909);
  const f2 = imul(h2 ^ (h2 >>> 16), 2246822507) ^ imul(f1 ^ (f1 >>> 13), 3266489909);
  const n = 4294967296 * (2097151 & f2) + (f1 >>> 0);
  return n.toString(16).padStart(14, '0');
}

/** The two seeds' hashes of `text`, 14 hex digits each. */
function hash53Pair(text: string, seedA: number, seedB: number): [string, string] {
  const s = absorb(startState(seedA, seedB), text);
  return [finish(s[0], s[1]), finish(s[2], s[3])];
}

/** The state of seeds 1 and 2 after `<first part>\u0000`, by first part (a run id), most recent last. */
const headStates = new Map<string, HashState>();
const headStatesMax = 1024;

function stateAfterHead(head: string): HashState {
  let state = headStates.get(head);
  if (state === undefined) {
    state = absorb(startState(1, 2), `${head}\u0000`);
    if (headStates.size >= headStatesMax) headStates.delete(headStates.keys().next().value as string);
    headStates.set(head, state);
  }
  return state;
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
  let s: HashState;
  if (parts.length < 2) {
    s = absorb(startState(1, 2), parts.join('\u0000'));
  } else {
    // The hash of `parts.join('\u0000')`, continued from the kept state after the parts but the last.
    const before = parts.length === 2 ? stateAfterHead(String(parts[0])) : stateBeforeLast(parts);
    s = absorb([before[0], before[1], before[2], before[3]], String(parts[parts.length - 1]));
  }
  return `${prefix}-${(finish(s[0], s[1]) + finish(s[2], s[3])).slice(0, 35 - prefix.length)}`;
}

/**
 * The state of seeds 1 and 2 after every part but the last, each followed by `\u0000`, by those
 * parts (a run's node and attempt: the ids of an agent loop's turns and tool calls, of a
 * foreach's items, differ only in their last part). Most recent last.
 */
const stemStates = new Map<string, HashState>();

function stateBeforeLast(parts: readonly (string | number)[]): HashState {
  const stem = parts.slice(1, -1).join('\u0000');
  const key = `${parts[0]}\u0000${stem}`;
  let state = stemStates.get(key);
  if (state === undefined) {
    const head = stateAfterHead(String(parts[0]));
    state = absorb([head[0], head[1], head[2], head[3]], `${stem}\u0000`);
    if (stemStates.size >= headStatesMax) stemStates.delete(stemStates.keys().next().value as string);
    stemStates.set(key, state);
  }
  return state;
}

const runKeys = new Map<string, string>();

/** What every event id of a run starts with: a per-run key (hashed once) and `-`. */
export function eventIdPrefix(runId: string): string {
  let prefix = runKeys.get(runId);
  if (prefix === undefined) {
    const [a, b] = hash53Pair(runId, 3, 4);
    prefix = `e${a}${b.slice(0, 8)}-`;
    if (runKeys.size >= 1024) runKeys.delete(runKeys.keys().next().value as string);
    runKeys.set(runId, prefix);
  }
  return prefix;
}

/** Event ids: the run's prefix and the seq. */
export function eventId(runId: string, seq: number): string {
  return `${eventIdPrefix(runId)}${seq.toString(36)}`;
}

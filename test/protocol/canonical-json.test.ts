// `canonicalJson` writes most values by sorting a copy and handing it to `JSON.stringify`, and
// falls back to the `canonicalize` package for what that cannot write in RFC 8785's order. Every
// hash the engine records (semantic hashes, plan hashes, schema keys, payload digests) is taken
// over this text, so it must stay byte for byte what `canonicalize` writes.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import canonicalizeModule from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../engine/hash.js';

const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as (value: unknown) => string | undefined;
const casesDir = join(import.meta.dirname, '..', 'cases');

/** A small deterministic generator (mulberry32), so a failure names a seed that repeats it. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const awkwardNames = ['', 'a', 'b', 'B', 'é', 'e\u0301', '\u{1f600}', '\ud800', '\uffff', '10', '2', '01', '-1', '1.5', '4294967295', '__proto__', 'constructor', 'toJSON', 'a b', '"', '\\', '\n'];
const awkwardStrings = ['', 'plain', 'tab\there', 'quote"', 'back\\slash', '\u0000\u001f', '\u2028\u2029', '\ud83d', '\ude00x', '\u{1f600}', 'é', '</script>'];
const awkwardNumbers = [0, -0, 1, -1, 0.1, 1e21, 1e-7, 123456789012345680000, 5e-324, 1.7976931348623157e308, 2 ** 53, -(2 ** 31), 333333333.3333333];

function value(next: () => number, depth: number): unknown {
  const pick = <T>(xs: T[]) => xs[Math.floor(next() * xs.length)];
  const kind = depth <= 0 ? Math.floor(next() * 4) : Math.floor(next() * 6);
  switch (kind) {
    case 0:
      return pick(awkwardNumbers);
    case 1:
      return pick(awkwardStrings);
    case 2:
      return pick([true, false, null]);
    case 3:
      return next() < 0.5 ? Math.floor(next() * 1e6) : next() * 1e3 - 500;
    case 4:
      return Array.from({ length: Math.floor(next() * 4) }, () => value(next, depth - 1));
    default: {
      const out: Record<string, unknown> = {};
      const n = Math.floor(next() * 5);
      // Plain names most of the time, so that most values take the sorted path, not the fallback.
      // Defined, not assigned, so that `__proto__` is an own member as JSON.parse makes it.
      for (let i = 0; i < n; i++) {
        const name = next() < 0.8 ? `k${Math.floor(next() * 40)}` : pick(awkwardNames);
        Object.defineProperty(out, name, { value: value(next, depth - 1), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
  }
}

describe('canonicalJson', () => {
  it('writes every test case template as canonicalize does', () => {
    let compared = 0;
    for (const name of readdirSync(casesDir)) {
      const file = join(casesDir, name, 'template.json');
      if (!existsSync(file)) continue;
      const template = JSON.parse(readFileSync(file, 'utf8'));
      expect(canonicalJson(template), name).toBe(canonicalize(template));
      compared++;
    }
    expect(compared).toBeGreaterThan(10);
  });

  it('writes RFC 8785 order and forms', () => {
    // RFC 8785, 3.2.3: members sorted by UTF-16 code units, not by code point or locale.
    expect(canonicalJson({ '\u20ac': 'Euro Sign', '\r': 'Carriage Return', '\ufb33': 'Hebrew Letter Dalet With Dagesh', '1': 'One', '\ud83d\ude00': 'Emoji: Grinning Face', '\u0080': 'Control', '\u00f6': 'Latin Small Letter O With Diaeresis' })).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    expect(canonicalJson({ b: [3, { z: 1, a: -0 }], a: 1e21, c: 'x' })).toBe('{"a":1e+21,"b":[3,{"a":0,"z":1}],"c":"x"}');
    // Array-index names: JavaScript keeps them first and in numeric order; the text must not.
    expect(canonicalJson({ b: 1, '10': 2, '2': 3, a: 4 })).toBe('{"10":2,"2":3,"a":4,"b":1}');
    // `__proto__` is a member like any other (JSON.parse makes it an own member).
    expect(canonicalJson(JSON.parse('{"z":1,"__proto__":{"b":2,"a":1}}'))).toBe('{"__proto__":{"a":1,"b":2},"z":1}');
  });

  it('skips undefined members, writes undefined items as null, and refuses what JSON cannot hold', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1] })).toBe('{"b":[null,1]}');
    expect(canonicalJson({ d: new Date(0) })).toBe(canonicalize({ d: new Date(0) }));
    // A hole (no parsed JSON has one) is written as canonicalize writes it.
    expect(canonicalJson([1, , 3])).toBe(canonicalize([1, , 3]));
    expect(() => canonicalJson({ a: NaN })).toThrow(/NaN/);
    expect(() => canonicalJson([Infinity])).toThrow(/Infinity/);
    expect(() => canonicalJson(undefined)).toThrow(/cannot be canonicalized/);
  });

  it('agrees with canonicalize on 5,000 generated values', () => {
    let sortedPath = 0;
    for (let seed = 1; seed <= 5000; seed++) {
      const v = value(random(seed), 4);
      const expected = canonicalize(v);
      expect(canonicalJson(v), `seed ${seed}`).toBe(expected);
      // Most generated values have no array-index name, so both paths are exercised.
      if (!/"(?:0|[1-9][0-9]*)":/.test(expected ?? '')) sortedPath++;
    }
    expect(sortedPath).toBeGreaterThan(1000);
  });
});

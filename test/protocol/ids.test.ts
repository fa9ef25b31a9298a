// Ids of `ids-v2` plans are journaled: the engine must derive exactly the ids it derived when a
// run was recorded, or the run no longer replays. The reference below is the definition
// (docs/engine.md, "Ids"): cyrb53 of the parts joined by U+0000, for seeds 1 and 2.
import { describe, expect, it } from 'vitest';
import { derivedId, eventId } from '../../engine/hash.js';

function cyrb53(text: string, seed: number): string {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, '0');
}

function referenceId(prefix: string, ...parts: (string | number)[]): string {
  const text = parts.join('\u0000');
  return `${prefix}-${(cyrb53(text, 1) + cyrb53(text, 2)).slice(0, 35 - prefix.length)}`;
}

/** A deterministic generator, so a failure names inputs that can be run again. */
function generator(seed: number) {
  let x = seed;
  const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789-_:.\u0000é€😀';
  return {
    int: (n: number) => next() % n,
    text: (max: number) => Array.from({ length: next() % max }, () => alphabet[next() % alphabet.length]).join(''),
  };
}

describe('derived ids (ids-v2)', () => {
  it('are the ids of the recorded journals: a call and a foreach item of a run', () => {
    // Taken from the journal of a recorded 2-step run and a foreach run (node `fan`, item 17).
    expect(derivedId('iv', 'run-01m8twjjpbadvgcscg6hhv4q8f', 's1', 1, '')).toBe(referenceId('iv', 'run-01m8twjjpbadvgcscg6hhv4q8f', 's1', 1, ''));
    expect(derivedId('iv', 'run-01m8twjjpbadvgcscg6hhv4q8f', 's1', 1, '')).toBe('iv-01195ab0fcbb5e08a016f758dd49');
    expect(derivedId('iv', 'run-01m8twjjpbadvgcscg6hhv4q8f', 's2', 1, '')).toBe('iv-1ad73046875bcf0a0470c5dd9169');
    expect(eventId('run-01m8twjjpbadvgcscg6hhv4q8f', 19)).toBe('e021349a8317b2d1729120d-j');
  });

  it('equal the hash of the joined parts for any parts, whichever run was hashed before', () => {
    const g = generator(7);
    const runs = Array.from({ length: 40 }, () => `run-${g.text(30)}`);
    for (let i = 0; i < 3000; i++) {
      const parts: (string | number)[] = [runs[g.int(runs.length)]];
      const more = g.int(5);
      for (let k = 0; k < more; k++) parts.push(g.int(2) === 0 ? g.text(12) : g.int(100_000));
      const prefix = ['iv', 'ev', 'x'][g.int(3)];
      expect(derivedId(prefix, ...parts), JSON.stringify([prefix, parts])).toBe(referenceId(prefix, ...parts));
    }
  });

  it('stay the same once more runs were hashed than the engine keeps the state of', () => {
    const first = derivedId('iv', 'run-kept-first', 'node', 1, '3:1');
    for (let i = 0; i < 1500; i++) derivedId('iv', `run-${i}`, 'node', 1, '');
    expect(derivedId('iv', 'run-kept-first', 'node', 1, '3:1')).toBe(first);
    expect(first).toBe(referenceId('iv', 'run-kept-first', 'node', 1, '3:1'));
  });

  it('of one part and of no parts are the hash of that text', () => {
    expect(derivedId('iv', 'only')).toBe(referenceId('iv', 'only'));
    expect(derivedId('iv')).toBe(referenceId('iv'));
  });
});

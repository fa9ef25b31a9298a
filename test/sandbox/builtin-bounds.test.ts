import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptEvaluator, type ScriptOutcome } from '../../sandbox/index.js';

let ev: ScriptEvaluator;
beforeAll(async () => {
  ev = await ScriptEvaluator.create();
});
afterAll(() => ev.dispose());

const code = (r: ScriptOutcome) => (r.ok ? `ok ${r.output}` : r.error.code);
/** Hang detector only: these cases used to run for seconds to minutes. */
const hangMs = 5_000;

function timed(f: () => ScriptOutcome): ScriptOutcome {
  const start = performance.now();
  const r = f();
  expect(performance.now() - start).toBeLessThan(hangMs);
  return r;
}

describe('work inside C built-ins is paid for in fuel', () => {
  const big = "'a'.repeat(1e6)";
  const needle = "'a'.repeat(1e4) + 'b'";
  const cases = [
    `(i) => ${big}.indexOf(${needle})`,
    `(i) => ${big}.lastIndexOf('b' + 'a'.repeat(1e4))`,
    `(i) => ${big}.includes(${needle})`,
    `(i) => ${big}.split(${needle})`,
    `(i) => ${big}.replaceAll(${needle}, 'x')`,
    `(i) => ${big}.replace(${needle}, 'x')`,
    `(i) => ${big}.search(${needle})`,
    `(i) => ${big}.match(${needle})`,
    `(i) => { try { return ${big}.indexOf(${needle}) } catch (e) { return 'caught' } }`,
    `(i) => { let n = 0; for (;;) { try { n += ${big}.indexOf(${needle}) } catch (e) {} } }`,
    `(i) => { let n = 0; for (;;) { try { n += 'a'.repeat(1e5).length } catch (e) {} } }`,
    `(i) => { const a = new Array(1e5).fill(1); for (;;) { try { a.join() } catch (e) {} } }`,
  ];
  for (const source of cases) {
    it(`ends with script.fuel at fuel 10: ${source.slice(7, 70)}`, () => {
      expect(code(timed(() => ev.evaluate(source, 'null', { fuel: 10 })))).toBe('script.fuel');
    });
  }
  it('charges the same fuel every time, and a search that finds its match early is cheap', async () => {
    const src = "const s = 'ab'.repeat(2e5); return [s.indexOf('b'), s.indexOf('c'), s.split('a').length, [1, 2, 3].join()]";
    const a = ev.evaluate(src, 'null');
    const fresh = await ScriptEvaluator.create({ pollCounterReset: 'loop' });
    try {
      expect(fresh.evaluate(src, 'null')).toEqual(a);
    } finally {
      fresh.dispose();
    }
    expect(a.ok && a.fuelUsed).toBeGreaterThan(0);
    const early = ev.evaluate("return 'ab'.repeat(2e5).indexOf('b')", 'null');
    expect(early.ok && a.ok && early.fuelUsed < a.fuelUsed).toBe(true);
  });
  it('the wrapped built-ins behave as before and cannot be replaced', () => {
    expect(ev.evaluate("return ['abc'.indexOf('c'), 'abc'.lastIndexOf('a'), 'abc'.includes('b'), 'abc'.startsWith('a'), 'abc'.endsWith('c'), 'a,b'.split(','), 'aXa'.replaceAll('a', 'b'), 'x'.padStart(3, '-'), 'ab'.repeat(2), [1, [2, 3]].join(';'), String([1, 2]), [1, 2].indexOf(2), [NaN].includes(NaN), 'a1b2'.match(/\\d/g), String.prototype.indexOf.name, String.prototype.indexOf.length]", 'null')).toEqual({
      ok: true,
      output: '[2,0,true,true,true,["a","b"],"bXb","--x","abab","1;2,3","1,2",1,true,["1","2"],"indexOf",1]',
      fuelUsed: 0,
    });
    for (const attempt of ['String.prototype.indexOf = () => 1', 'Object.defineProperty(String.prototype, "includes", { value: () => 1 })', 'delete Array.prototype.join']) {
      expect(code(ev.evaluate(`${attempt}; return 1`, 'null')), attempt).toBe('script.runtime');
    }
    expect(code(ev.evaluate("return 'abc'.includes(/a/)", 'null'))).toBe('script.runtime');
    expect(code(ev.evaluate('return String.prototype.indexOf.call(null, "a")', 'null'))).toBe('script.runtime');
  });
});

describe('wall-clock failsafe', () => {
  it('ends an evaluation with script.wall-time when the clock passes the deadline, whatever fuel is left', async () => {
    let now = 0;
    // Each reading advances the injected clock by one second.
    const clocked = await ScriptEvaluator.create({ clock: () => (now += 1_000) });
    try {
      expect(code(clocked.evaluate('for (;;) {}', 'null', { fuel: 100_000 }))).toBe('script.wall-time');
      expect(code(clocked.evaluate("const s = 'a'.repeat(1e5); for (;;) { try { s.indexOf('a'.repeat(3) + 'b') } catch (e) {} }", 'null', { fuel: 100_000 }))).toBe('script.wall-time');
      // A short script never reaches a poll of the failsafe and is unaffected.
      expect(clocked.evaluate('return input + 1', '1', { fuel: 100_000 })).toEqual({ ok: true, output: '2', fuelUsed: 0 });
    } finally {
      clocked.dispose();
    }
  });
});

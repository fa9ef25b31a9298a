import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptEvaluator } from '../../sandbox/index.js';
import { sourceNestsDeeperThan } from '../../sandbox/source-depth.js';

let ev: ScriptEvaluator;
beforeAll(async () => {
  ev = await ScriptEvaluator.create();
});
afterAll(() => ev.dispose());

/** An object literal nested 320 levels deep (about 1.6 KB). */
const deepSource = 'return ' + '{a:'.repeat(320) + '1' + '}'.repeat(320);

describe('deeply nested sources are refused before parsing', () => {
  it('evaluate and checkSyntax give script.too-deep, and the next script still runs', () => {
    for (const source of [deepSource, 'return ' + '['.repeat(1000) + ']'.repeat(1000), 'return ' + '`${'.repeat(400) + '1' + '}`'.repeat(400), '('.repeat(5000)]) {
      const r = ev.evaluate(source, 'null');
      expect(r.ok ? 'ok' : r.error.code, source.slice(0, 20)).toBe('script.too-deep');
      expect(ev.checkSyntax(source)?.code).toBe('script.too-deep');
      expect(ev.evaluate('return input + 1', '1')).toEqual({ ok: true, output: '2', fuelUsed: 0 });
    }
  });
  it('counts brackets only where they are code', () => {
    const deep = '('.repeat(200);
    const hidden = [
      `return "${deep}".length`,
      `return '${deep}'.length`,
      `return \`${deep}\`.length`,
      `// ${deep}\nreturn 1`,
      `/* ${deep} */ return 1`,
      `return /[(]{1}${'\\('.repeat(200)}/.test("(")`,
    ];
    for (const source of hidden) expect(sourceNestsDeeperThan(source, 100), source.slice(0, 30)).toBe(false);
    expect(ev.evaluate(hidden[0], 'null')).toEqual({ ok: true, output: '200', fuelUsed: 0 });
  });
  it('cannot be fooled by a division read as a regular expression, or the reverse', () => {
    const arr = '['.repeat(150) + ']'.repeat(150);
    const tricks = [
      `const a = 1; return a / ${arr} / 1`,
      `return (1) / "x/" + ${arr} + ""`,
      `if (1) /"/.test(""); return ${arr}; ""`,
      `let a = 1; a++ / ${arr} / 2; return 1`,
      `return {} / ${arr} / 1`,
      `return \`\${ "}" }\` + ${arr}`,
    ];
    for (const source of tricks) expect(sourceNestsDeeperThan(source, 100), source.slice(0, 30)).toBe(true);
  });
  it('accepts ordinary nesting', () => {
    expect(ev.evaluate('return ' + '['.repeat(60) + '1' + ']'.repeat(60) + '.flat(Infinity)', 'null')).toEqual({ ok: true, output: '[1]', fuelUsed: 0 });
    expect(ev.evaluate('if (input) /(a)(b)/.test("ab"); const f = (x) => ({ y: [x, { z: `${x}${"}"}` }] }); return f(1)', '1')).toEqual({
      ok: true,
      output: '{"y":[1,{"z":"1}"}]}',
      fuelUsed: 0,
    });
  });
});

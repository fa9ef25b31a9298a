import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptEvaluator, scriptErrorCodes, type ScriptOutcome } from '../../sandbox/index.js';

let ev: ScriptEvaluator;
beforeAll(async () => {
  ev = await ScriptEvaluator.create();
});
afterAll(() => ev.dispose());

const items = JSON.stringify({ items: [{ id: 1, tag: 'a' }, { id: 2, tag: 'b' }, { id: 3, tag: 'a' }] });
const ok = (output: string): ScriptOutcome => ({ ok: true, output, fuelUsed: 0 });

describe('script shapes', () => {
  it('runs a function body over the input', () => {
    expect(ev.evaluate('return input.items.length', items)).toEqual(ok('3'));
  });
  it('runs an arrow function expression over the input', () => {
    expect(ev.evaluate('(input) => input.items.filter((x) => x.tag === "a").map((x) => x.id)', items)).toEqual(ok('[1,3]'));
  });
  it('runs a plain expression with input in scope', () => {
    expect(ev.evaluate('input.items[1]', items)).toEqual(ok('{"id":2,"tag":"b"}'));
  });
  it('accepts a trailing line comment', () => {
    expect(ev.evaluate('x => x + 1 // one more', '41')).toEqual(ok('42'));
  });
  it('keeps key order and escapes as JSON.stringify does', () => {
    expect(ev.evaluate('return { b: 1, a: "\\u2028\\n", 2: null, 1: true }', 'null')).toEqual(ok('{"1":true,"2":null,"b":1,"a":"\u2028\\n"}'));
  });
  it('keeps a "__proto__" key as data', () => {
    expect(ev.evaluate('return input', '{"__proto__":{"x":1}}')).toEqual(ok('{"__proto__":{"x":1}}'));
  });
});

describe('errors carry a stable code, the message and the script line', () => {
  it('syntax error with its line', () => {
    expect(ev.evaluate('const a = 1;\n\nlet b = ;', 'null')).toEqual({
      ok: false,
      error: { code: 'script.syntax', message: "SyntaxError: unexpected token in expression: ';'", line: 3 },
    });
  });
  it('runtime error with its line', () => {
    expect(ev.evaluate('const a = input;\nreturn a.b.c;', '{}')).toEqual({
      ok: false,
      error: { code: 'script.runtime', message: "TypeError: cannot read property 'c' of undefined", line: 2 },
    });
  });
  it('thrown non-Error values', () => {
    expect(ev.evaluate('throw "boom"', 'null')).toEqual({ ok: false, error: { code: 'script.runtime', message: 'uncaught boom' } });
  });
  it('not-json outputs', () => {
    for (const src of ['return undefined', 'return () => 1', 'return { a: () => 1 }', 'return [Symbol()]', 'return { a: Infinity }', 'return new Map()', 'return Symbol()', 'return 1n', 'return { a: [1, { b: 1n }] }', 'return new (class A {})()', 'const a = {}; a.a = a; return a']) {
      const r = ev.evaluate(src, 'null');
      expect(r.ok ? 'ok' : r.error.code, src).toBe('script.not-json');
    }
  });
  it('drops undefined members and writes null for undefined array elements, as JSON.stringify does', () => {
    expect(ev.evaluate('(i) => ({ a: undefined, b: 1 })', 'null')).toEqual(ok('{"b":1}'));
    expect(ev.evaluate('return [1, undefined, , 3]', 'null')).toEqual(ok('[1,null,null,3]'));
    expect(ev.evaluate('return { a: [1, { b: undefined, c: { toJSON() { return undefined } } }] }', 'null')).toEqual(ok('{"a":[1,{}]}'));
  });
  it('"throw null" is a runtime error, evaluated once', () => {
    ev.evaluate('return 1', 'null');
    const before = ev.diagnostics().evaluationsOnContext;
    expect(before).toBeGreaterThan(0);
    expect(ev.evaluate('throw null', 'null')).toEqual({ ok: false, error: { code: 'script.runtime', message: 'uncaught null' } });
    expect(ev.diagnostics().evaluationsOnContext).toBe(before + 1);
  });
  it('non-enumerable and symbol-keyed properties are left out, as JSON.stringify does', () => {
    expect(ev.evaluate('return Object.defineProperty({ [Symbol()]: 1, a: 1 }, "x", { value: 1 })', 'null')).toEqual(ok('{"a":1}'));
  });
  it('output byte limit counts UTF-8 bytes', () => {
    expect(ev.evaluate('return "é".repeat(5)', 'null', { outputBytes: 12 })).toEqual(ok('"ééééé"'));
    const r = ev.evaluate('return "é".repeat(6)', 'null', { outputBytes: 12 });
    expect(r.ok ? 'ok' : r.error.code).toBe('script.output-too-large');
  });
  it('invalid input', () => {
    for (const input of ['{', '1e999', '[' .repeat(65) + ']'.repeat(65), '']) {
      const r = ev.evaluate('return 1', input);
      expect(r.ok ? 'ok' : r.error.code, input.slice(0, 10)).toBe('script.input-invalid');
    }
  });
  it('limits out of range are refused', () => {
    for (const limits of [{ fuel: 0 }, { stackBytes: 1024 * 1024 }, { memoryBytes: 1.5 }, { bogus: 1 } as never]) {
      const r = ev.evaluate('return 1', 'null', limits);
      expect(r.ok ? 'ok' : r.error.code).toBe('script.request-invalid');
    }
  });
  it('every code used is a documented one', () => {
    const r = ev.evaluate('return Math.random()', 'null');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(scriptErrorCodes).toContain(r.error.code);
  });
});

describe('checkSyntax', () => {
  it('accepts valid bodies and expressions without running them', () => {
    expect(ev.checkSyntax('for (;;) {}')).toBeUndefined();
    expect(ev.checkSyntax('(input) => input.x')).toBeUndefined();
  });
  it('reports the syntax error and its line', () => {
    expect(ev.checkSyntax('return 1;\nreturn (')).toMatchObject({ code: 'script.syntax', line: 2 });
  });
});

describe('determinism', () => {
  const src = 'let s = 0; for (let i = 0; i < 300000; i++) s = (s * 31 + i) % 1000003; return { s, sorted: [3,1,2].sort() }';
  it('gives the same output and fuel on a warm and on a fresh evaluator', async () => {
    const first = ev.evaluate(src, 'null');
    for (let i = 0; i < 5; i++) ev.evaluate('let x = 0; for (let i = 0; i < ' + (1000 + i * 777) + '; i++) x++; return x', 'null');
    const warm = ev.evaluate(src, 'null');
    const fresh = await ScriptEvaluator.create();
    try {
      expect(fresh.evaluate(src, 'null')).toEqual(first);
    } finally {
      fresh.dispose();
    }
    expect(warm).toEqual(first);
    expect(first.ok && first.fuelUsed).toBeGreaterThan(0);
  });
  it('stops at the same point of a fuel budget every time', () => {
    const a = ev.evaluate('let n = 0; try { for (;;) n++; } finally { return n }', 'null', { fuel: 3 });
    ev.evaluate('let x = 0; for (let i = 0; i < 4321; i++) x++; return x', 'null');
    const b = ev.evaluate('let n = 0; try { for (;;) n++; } finally { return n }', 'null', { fuel: 3 });
    expect(a).toEqual({ ok: false, error: { code: 'script.fuel', message: 'fuel exhausted (limit 3)' } });
    expect(b).toEqual(a);
  });
});

describe('poll counter reset', () => {
  const scripts = [
    'let s = 0; for (let i = 0; i < 123457; i++) s += i; return s',
    'function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2) } return f(20)',
    'return "ab".repeat(5000).split("").sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join("").length',
    'return /^(a|b)*c$/.test("ab".repeat(3000))',
  ];
  it('locates the counter in this QuickJS build', () => {
    expect(ev.diagnostics().pollCounterReset).toBe('direct');
  });
  it('counts the same fuel when the counter is drained by a loop instead', async () => {
    const looped = await ScriptEvaluator.create({ pollCounterReset: 'loop' });
    try {
      expect(looped.diagnostics().pollCounterReset).toBe('loop');
      for (const src of scripts) {
        const direct = ev.evaluate(src, 'null');
        expect(direct.ok && direct.fuelUsed, src).toBeGreaterThan(0);
        expect(looped.evaluate(src, 'null'), src).toEqual(direct);
        // And the same again after other work on both.
        ev.evaluate('let x = 0; for (let i = 0; i < 777; i++) x++; return x', 'null');
        looped.evaluate('let x = 0; for (let i = 0; i < 3333; i++) x++; return x', 'null');
        expect(looped.evaluate(src, 'null'), src).toEqual(ev.evaluate(src, 'null'));
      }
    } finally {
      looped.dispose();
    }
  });
});

describe('isolation between evaluations on a reused context', () => {
  it('state written by one script is not seen by the next', () => {
    const attempts = [
      'globalThis.leak = 1',
      'this.leak = 1',
      'Object.prototype.leak = 1',
      'Array.prototype.push = function () { return 42 }',
      'JSON.stringify = () => "leak"',
      'Math.leak = 1',
      'Object.getPrototypeOf(function* () {}).leak = 1',
      'Object.getPrototypeOf([][Symbol.iterator]()).leak = 1',
      'Object.defineProperty(globalThis, "leak", { value: 1 })',
      'Error.prototype.leak = 1',
    ];
    for (const attempt of attempts) {
      const r = ev.evaluate(`try { ${attempt}; } catch (e) { return "refused" } return "done"`, 'null');
      expect(r, attempt).toEqual(ok('"refused"'));
    }
    const probe = ev.evaluate(
      'return [typeof leak, "leak" in {}, "leak" in [], "leak" in Math, "leak" in Error.prototype, [].push(1), JSON.stringify(1), "leak" in Object.getPrototypeOf([][Symbol.iterator]())]',
      'null',
    );
    expect(probe).toEqual(ok('["undefined",false,false,false,false,1,"1",false]'));
  });
  it('no record of the last regular expression match survives', () => {
    expect(ev.evaluate('/(secret)/.exec("a secret"); return 1', 'null')).toEqual(ok('1'));
    expect(ev.evaluate('return [typeof RegExp.$1, typeof RegExp.lastMatch, typeof RegExp.input]', 'null')).toEqual(ok('["undefined","undefined","undefined"]'));
  });
  it('a script that closes its wrapper cannot leave bindings behind', () => {
    const r = ev.evaluate('}); let leaked = 1; var leakedVar = 2; (function () {', 'null');
    expect(r.ok ? 'ok' : r.error.code).toMatch(/^script\.(syntax|runtime)$/);
    expect(ev.evaluate('return [typeof leaked, typeof leakedVar]', 'null')).toEqual(ok('["undefined","undefined"]'));
  });
  it('own properties can still shadow frozen prototype methods', () => {
    expect(ev.evaluate('const o = {}; o.toString = () => "mine"; const e = new Error("m"); e.name = "Custom"; return [String(o), String(e)]', 'null')).toEqual(
      ok('["mine","Custom: m"]'),
    );
  });
});

describe('recovery after resource failures', () => {
  it('keeps answering after memory and stack failures', () => {
    const mem = ev.evaluate('const a = []; for (;;) a.push(new Array(1000).fill(1))', 'null', { memoryBytes: 4 * 1024 * 1024 });
    expect(mem.ok ? 'ok' : mem.error.code).toBe('script.memory');
    const stack = ev.evaluate('function f(n) { return f(n + 1) + 1 } return f(0)', 'null');
    expect(stack.ok ? 'ok' : stack.error.code).toBe('script.stack');
    expect(ev.evaluate('return input.items.length', items)).toEqual(ok('3'));
  });
  it('refuses a variant that drops the bounded memory', async () => {
    const { newVariant, RELEASE_SYNC } = await import('quickjs-emscripten');
    await expect(ScriptEvaluator.create({ loadVariant: () => newVariant(RELEASE_SYNC, {}) })).rejects.toThrow(/bounded WebAssembly.Memory/);
  });
  it('keeps linear memory near the heap limit after a heap bomb', () => {
    const r = ev.evaluate('let s = []; for (;;) s.push("x".repeat(1000) + s.length)', 'null', { memoryBytes: 8 * 1024 * 1024, fuel: 100_000 });
    expect(r.ok ? 'ok' : r.error.code).toBe('script.memory');
    expect(ev.diagnostics().wasmMemoryBytes).toBeLessThanOrEqual(64 * 1024 * 1024);
  });
  it('throws when used after dispose', async () => {
    const e = await ScriptEvaluator.create();
    e.dispose();
    expect(() => e.evaluate('return 1', 'null')).toThrow(/after dispose/);
  });
});

/**
 * Hostile scripts and the outcome each must end in. Shared by the in-process
 * suite and the service suite. `expect` is an error code, or `ok` with the
 * exact output.
 */
export interface AdversarialCase {
  name: string;
  source: string;
  input?: string;
  limits?: { fuel?: number; memoryBytes?: number; stackBytes?: number; outputBytes?: number };
  expect: { code: string } | { ok: string };
}

const small = { fuel: 300, memoryBytes: 8 * 1024 * 1024 };

export const adversarialCases: AdversarialCase[] = [
  // --- reaching the host ---------------------------------------------------
  { name: 'Function via constructor chain', source: 'return (() => 0).constructor("return globalThis")()', expect: { code: 'script.forbidden' } },
  { name: 'Function via [].constructor.constructor', source: 'return [].constructor.constructor("return 1")()', expect: { code: 'script.forbidden' } },
  { name: 'AsyncFunction constructor', source: 'return Object.getPrototypeOf(async function () {}).constructor("return 1")', expect: { code: 'script.forbidden' } },
  { name: 'GeneratorFunction constructor', source: 'return Object.getPrototypeOf(function* () {}).constructor("yield 1")().next()', expect: { code: 'script.forbidden' } },
  { name: 'AsyncGeneratorFunction constructor', source: 'return Object.getPrototypeOf(async function* () {}).constructor("yield 1")', expect: { code: 'script.forbidden' } },
  { name: 'direct eval', source: 'return eval("1 + 1")', expect: { code: 'script.forbidden' } },
  { name: 'indirect eval for the global object', source: 'return (0, eval)("this")', expect: { code: 'script.forbidden' } },
  {
    name: 'no host objects are reachable',
    source: 'return [typeof process, typeof require, typeof module, typeof globalThis.process, typeof Buffer, typeof fetch, typeof console, typeof std, typeof os, typeof print, typeof WebAssembly, typeof this]',
    expect: { ok: '["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined"]' },
  },
  { name: 'dynamic import', source: 'return import("fs")', expect: { code: 'script.not-json' } },
  { name: 'import.meta outside a module', source: 'return import.meta', expect: { code: 'script.syntax' } },
  { name: 'static import', source: 'import fs from "fs"; return 1', expect: { code: 'script.syntax' } },
  { name: 'closing the function wrapper', source: '}); globalThis.x = 1; (function () {', expect: { code: 'script.syntax' } },
  { name: 'with statement (strict mode)', source: 'with (input) { return a }', input: '{"a":1}', expect: { code: 'script.syntax' } },
  { name: 'arguments.callee (strict mode)', source: 'return arguments.callee', expect: { code: 'script.runtime' } },
  { name: 'global object is frozen', source: 'globalThis.escape = () => 1; return 1', expect: { code: 'script.runtime' } },
  { name: 'replacing the global prototype', source: 'Object.setPrototypeOf(globalThis, null); return 1', expect: { code: 'script.runtime' } },
  { name: 'prototype pollution through the input', source: 'input.__proto__.polluted = 1; return 1', input: '{}', expect: { code: 'script.runtime' } },
  { name: 'prototype pollution of Array.prototype', source: 'Array.prototype.map = () => "owned"; return 1', expect: { code: 'script.runtime' } },
  { name: 'JSON.parse "__proto__" stays data', source: 'const o = JSON.parse(\'{"__proto__":{"polluted":1}}\'); return [({}).polluted === undefined, Object.keys(o)]', expect: { ok: '[true,["__proto__"]]' } },
  { name: 'Error.prepareStackTrace hook', source: 'Error.prepareStackTrace = (e, s) => s; return 1', expect: { code: 'script.runtime' } },
  { name: 'error stack shows no host paths', source: 'try { null.f() } catch (e) { return /\\/|node:|wasm/.test(e.stack) }', expect: { ok: 'false' } },
  { name: 'Symbol.species hijack', source: 'Array[Symbol.species] = function () {}; return 1', expect: { code: 'script.runtime' } },

  // --- output traps ----------------------------------------------------------
  { name: 'Proxy ownKeys trap throws', source: 'return new Proxy({}, { ownKeys() { throw new Error("trap") } })', expect: { code: 'script.not-json' } },
  { name: 'Proxy array answering every get', source: 'return new Proxy([], { get() { return 1 } })', expect: { ok: '[1]' } },
  { name: 'Proxy get trap that throws', source: 'return new Proxy({ a: 1 }, { get() { throw new Error("trap") } })', expect: { code: 'script.not-json' } },
  { name: 'revoked Proxy', source: 'const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy', expect: { code: 'script.not-json' } },
  { name: 'Proxy over a Map', source: 'return new Proxy(new Map(), {})', expect: { code: 'script.not-json' } },
  { name: 'getter that throws', source: 'return { get x() { throw new Error("no") } }', expect: { code: 'script.not-json' } },
  { name: 'array index getter that throws', source: 'const a = [1]; Object.defineProperty(a, 0, { get() { throw new Error("g") } }); return a', expect: { code: 'script.not-json' } },
  { name: 'toJSON runs as in JSON.stringify', source: 'return { toJSON() { return 1 } }', expect: { ok: '1' } },
  { name: 'toJSON returning undefined drops the member', source: 'return { a: { toJSON() { return undefined } } }', expect: { ok: '{}' } },
  { name: 'toJSON returning undefined at the top', source: 'return { toJSON() { return undefined } }', expect: { code: 'script.not-json' } },
  { name: 'getter that changes its answer is read once', source: 'let n = 0; return { get x() { n++; return n } }', expect: { ok: '{"x":1}' } },
  { name: 'cycle', source: 'const a = { b: {} }; a.b.a = a; return a', expect: { code: 'script.not-json' } },
  { name: 'NaN deep inside', source: 'return { a: [1, { b: 0 / 0 }] }', expect: { code: 'script.not-json' } },
  { name: 'class instance', source: 'class P { constructor() { this.x = 1 } } return new P()', expect: { code: 'script.not-json' } },
  { name: 'a returned promise', source: 'return (async () => 1)()', expect: { code: 'script.not-json' } },
  { name: 'throwing a Proxy', source: 'throw new Proxy({}, { get() { throw new Error("x") } })', expect: { code: 'script.runtime' } },

  // --- resource bombs ----------------------------------------------------------
  { name: 'infinite loop', source: 'for (;;) {}', limits: small, expect: { code: 'script.fuel' } },
  { name: 'catching the interrupt', source: 'for (;;) { try { for (;;) {} } catch (e) {} }', limits: small, expect: { code: 'script.fuel' } },
  { name: 'finally after the interrupt', source: 'let n = 0; try { for (;;) n++ } finally { return n }', limits: small, expect: { code: 'script.fuel' } },
  { name: 'exponential string growth', source: 'let s = "x"; for (;;) s += s', limits: small, expect: { code: 'script.memory' } },
  { name: 'huge array', source: 'return new Array(1e8).fill(0).length', limits: small, expect: { code: 'script.memory' } },
  { name: 'object graph growth', source: 'const m = new Map(); for (let i = 0; ; i++) m.set(i, { i })', limits: small, expect: { code: 'script.memory' } },
  { name: 'deep recursion', source: 'function f(n) { return f(n + 1) + 1 } return f(0)', limits: small, expect: { code: 'script.stack' } },
  { name: 'mutual recursion through getters', source: 'const o = { get a() { return this.b }, get b() { return this.a } }; return o.a', limits: small, expect: { code: 'script.stack' } },
  { name: 'catastrophic regular expression', source: 'return /^(a+)+$/.test("a".repeat(40) + "b")', limits: small, expect: { code: 'script.fuel' } },
  { name: 'deeply nested output', source: 'let o = 1; for (let i = 0; i < 100; i++) o = [o]; return o', limits: small, expect: { code: 'script.output-too-large' } },
  { name: 'very deeply nested output', source: 'let o = 1; for (let i = 0; i < 1e5; i++) o = [o]; return o', limits: small, expect: { code: 'script.stack' } },
  { name: 'deep JSON.stringify inside the script', source: 'let o = {}; for (let i = 0; i < 1e5; i++) o = { o }; return JSON.stringify(o).length', limits: small, expect: { code: 'script.stack' } },
  { name: 'deep Array.prototype.join', source: 'let o = []; for (let i = 0; i < 1e5; i++) o = [o]; return String(o).length', limits: small, expect: { code: 'script.stack' } },
  // 1e5 proxies and handlers take more than 8 MiB of linear memory: test the stack with the default memory.
  { name: 'long Proxy chain', source: 'let p = {}; for (let i = 0; i < 1e5; i++) p = new Proxy(p, {}); return Object.keys(p)', limits: { fuel: 300 }, expect: { code: 'script.stack' } },
  { name: 'long prototype chain', source: 'let p = {}; for (let i = 0; i < 1e5; i++) p = Object.create(p); return p.missing === undefined', limits: small, expect: { ok: 'true' } },
  // repeat pays ~8 units per character produced (builtin-bounds.ts): 2e6 characters are ~490 fuel.
  { name: 'huge output', source: 'return "x".repeat(2e6)', limits: { ...small, fuel: 1000 }, expect: { code: 'script.output-too-large' } },
  { name: 'exponential shared-structure output', source: 'let a = [1]; for (let i = 0; i < 40; i++) a = [a, a]; return a', limits: small, expect: { code: 'script.fuel' } },
  { name: 'deeply nested input', source: 'return 1', input: '['.repeat(100) + ']'.repeat(100), expect: { code: 'script.input-invalid' } },
  { name: 'sort with a throwing comparator', source: 'return [3, 1, 2].sort(() => { throw new Error("cmp") })', expect: { code: 'script.runtime' } },

  // --- nondeterminism probes ------------------------------------------------------
  { name: 'Date.now', source: 'return Date.now()', expect: { code: 'script.forbidden' } },
  { name: 'new Date', source: 'return String(new Date())', expect: { code: 'script.forbidden' } },
  { name: 'Math.random', source: 'return Math.random()', expect: { code: 'script.forbidden' } },
  { name: 'Math.random hidden in a getter of the output', source: 'return { get x() { return Math.random() } }', expect: { code: 'script.forbidden' } },
  { name: 'performance.now', source: 'return performance.now()', expect: { code: 'script.runtime' } },
  { name: 'timers', source: 'return [typeof setTimeout, typeof setInterval, typeof queueMicrotask, typeof WeakRef, typeof FinalizationRegistry, typeof Intl, typeof Atomics]', expect: { ok: '["undefined","undefined","undefined","undefined","undefined","undefined","undefined"]' } },
  { name: 'timing via a loop counts fuel, not time', source: 'let n = 0; for (let i = 0; i < 123456; i++) n += i & 1; return n', expect: { ok: '61728' } },
];

/**
 * Guest-side JavaScript evaluated once in every fresh QuickJS context.
 *
 * It removes the nondeterministic and code-generating capabilities, freezes
 * every intrinsic reachable by a script (so a context can be reused without
 * one evaluation seeing state left by another), and returns the two functions
 * the host calls: `compile`, `exec` and `drain`. None is reachable from the
 * global object; the host holds the only handles.
 *
 * compile(source)
 *   returns [fn, isExpression] (length 2), or [code, message, line] (length 3).
 * exec(compiled, inputText, outputUnitsMax)
 *   returns the output JSON text (a string) on success, or
 *   [code, message, line] for an error the guest could classify.
 *   An uncatchable interrupt (fuel) propagates to the host.
 *
 * drain() loops until the host's interrupt handler stops it; the host uses it
 * to reset QuickJS's per-context poll counter so fuel is counted from the
 * same phase in every evaluation.
 *
 * The source is a function expression; the host calls it once with its
 * `charge(units) -> exhausted` function (builtin-bounds.ts), which only the
 * prelude's closures can reach.
 */
import { builtinBoundsSource } from './builtin-bounds.js';

/** Lines that the Function constructor and our prologue put before line 1 of a script. */
export const scriptLineOffset = 3;

export const preludeSource = String.raw`(function (charge) {
  "use strict";
  const G = globalThis;
  const O = Object;
  const freeze = O.freeze, getProto = O.getPrototypeOf, getDescs = O.getOwnPropertyDescriptors,
    getDesc = O.getOwnPropertyDescriptor, defProp = O.defineProperty, create = O.create;
  const ownKeys = Reflect.ownKeys, apply = Reflect.apply;
  const isArray = Array.isArray, ArrayProto = Array.prototype, ObjectProto = O.prototype;
  const RealFunction = Function;
  const jsonParse = JSON.parse, jsonStringify = JSON.stringify;
  const ErrorC = Error, InternalErrorC = InternalError, SyntaxErrorC = SyntaxError, TypeErrorC = TypeError;
  const numIsFinite = Number.isFinite;
  const strSlice = String.prototype.slice;
  const regexExec = RegExp.prototype.exec;
  const inputLine = /<input>:(\d+)/;
  const StringC = String;
  const fnToString = RealFunction.prototype.toString;

  class ForbiddenError extends ErrorC {}
  defProp(ForbiddenError.prototype, "name", { value: "ForbiddenError" });
  const forbid = (what) => {
    const f = function () { throw new ForbiddenError(what + " is not available in scripts"); };
    return f;
  };

  // Nondeterminism: no clock, no randomness (a fixed error, not a fixed number).
  defProp(Math, "random", { value: forbid("Math.random") });
  const DateStub = forbid("Date");
  DateStub.now = forbid("Date.now");
  defProp(G, "Date", { value: DateStub, writable: true, configurable: true });

  // No generation of new code from strings. The host compiles scripts with
  // the captured constructor below; scripts only see throwing stand-ins that
  // keep instanceof working.
  defProp(G, "eval", { value: forbid("eval"), writable: true, configurable: true });
  const samples = [function () {}, function* () {}, async function () {}, async function* () {}];
  for (let i = 0; i < samples.length; i++) {
    const proto = getProto(samples[i]);
    const stub = forbid("Function constructor");
    stub.prototype = proto;
    defProp(proto, "constructor", { value: stub });
    if (i === 0) defProp(G, "Function", { value: stub, writable: true, configurable: true });
  }

  // Built-ins whose work can exceed what fuel sees pay for it (builtin-bounds.ts).
  const bounds = (${builtinBoundsSource})(charge);
  const boundsReset = bounds[0], boundsFlush = bounds[1];

  // Freezing prototypes turns "obj.toString = f" into an error (the override
  // mistake); turn the commonly shadowed ones into accessors that define an
  // own property on the receiver instead.
  const tame = (obj, key) => {
    const d = getDesc(obj, key);
    if (!d || !("value" in d)) return;
    const value = d.value;
    defProp(obj, key, {
      get: function () { return value; },
      set: function (v) {
        if (this === obj) throw new TypeErrorC("Cannot assign to read only property '" + StringC(key) + "'");
        defProp(this, key, { value: v, writable: true, enumerable: true, configurable: true });
      },
      enumerable: d.enumerable,
      configurable: false,
    });
  };
  const tamed = [[ObjectProto, ["constructor", "toString", "valueOf", "toLocaleString", "hasOwnProperty"]],
    [ErrorC.prototype, ["name", "message", "toString", "constructor"]],
    [RealFunction.prototype, ["toString", "name"]]];
  for (let i = 0; i < tamed.length; i++) {
    const keys = tamed[i][1];
    for (let j = 0; j < keys.length; j++) tame(tamed[i][0], keys[j]);
  }

  // Freeze everything a script can reach, including intrinsics that are only
  // reachable through instances (iterator and generator prototypes, ...).
  const roots = [G, ForbiddenError, getProto(Uint8Array),
    getProto(function* () {}), getProto(async function () {}), getProto(async function* () {}),
    getProto((function* () {})()), getProto((async function* () {})()),
    getProto([][Symbol.iterator]()), getProto(new Map()[Symbol.iterator]()),
    getProto(new Set()[Symbol.iterator]()), getProto(""[Symbol.iterator]()),
    getProto(/a/[Symbol.matchAll]("")), getDesc(function () { "use strict"; return arguments; }(), "callee").get];
  if (typeof Iterator === "function") {
    roots.push(getProto([].values().map((x) => x)));
    roots.push(getProto(Iterator.from({ next() { return { done: true }; } })));
  }
  const seen = new WeakSet();
  while (roots.length > 0) {
    const o = roots.pop();
    if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) continue;
    seen.add(o);
    freeze(o);
    roots.push(getProto(o));
    const descs = getDescs(o);
    const keys = ownKeys(descs);
    for (let i = 0; i < keys.length; i++) {
      const d = descs[keys[i]];
      if ("value" in d) roots.push(d.value); else { roots.push(d.get); roots.push(d.set); }
    }
  }

  class Reject { constructor(code, message) { this.code = code; this.message = message; } }
  const reject = (message) => { throw new Reject("script.not-json", "output is not JSON: " + message); };

  // Serialisation is JSON.stringify's own single pass (so getters and proxies
  // are read once), with a replacer that turns into an error every value
  // JSON.stringify would silently drop or change other than undefined:
  // functions, symbols, bigints, non-finite numbers, and objects that are
  // neither plain objects nor plain arrays (Map, class instances, boxed
  // primitives, ...). undefined is left to JSON.stringify, which drops an
  // undefined member and writes null for undefined in an array (and for a
  // hole); only an undefined result as a whole is refused (in exec). toJSON
  // methods, getters and proxy traps run as JSON.stringify runs them.
  const replacer = (key, v) => {
    switch (typeof v) {
      case "string": case "boolean": return v;
      case "number": if (!numIsFinite(v)) reject("non-finite number " + StringC(v)); return v;
      case "undefined": return v;
      case "function": reject("a function");
      case "symbol": reject("a symbol");
      case "bigint": reject("a bigint");
    }
    if (v === null) return v;
    const proto = getProto(v);
    if (isArray(v) ? proto !== ArrayProto : proto !== ObjectProto && proto !== null) {
      reject(isArray(v) ? "an array with a non-standard prototype" : "an object that is not a plain object");
    }
    return v;
  };

  const messageCharsMax = 1024;
  const clip = (s) => (s.length > messageCharsMax ? apply(strSlice, s, [0, messageCharsMax]) : s);
  const lineOf = (e) => {
    const d = getDesc(e, "stack");
    if (!d || typeof d.value !== "string") return 0;
    const m = apply(regexExec, inputLine, [d.value]);
    return m ? +m[1] : 0;
  };
  // Classifies a caught value. Reads through the script's own getters are
  // allowed: they run under the same fuel and are deterministic.
  const describe = (e, phase) => {
    if (e instanceof Reject) return [e.code, e.message, 0];
    if (e instanceof ErrorC) {
      let name = "Error", message = "";
      try { name = StringC(e.name); message = StringC(e.message); } catch (_) { /* keep defaults */ }
      const text = clip(message === "" ? name : name + ": " + message);
      const line = lineOf(e);
      if (e instanceof InternalErrorC) {
        if (message === "out of memory" || message === "string too long" || message === "invalid array length")
          return ["script.memory", text, line];
        if (message === "stack overflow") return ["script.stack", text, line];
      }
      if (e instanceof ForbiddenError) return ["script.forbidden", text, line];
      if (phase === 0 && e instanceof SyntaxErrorC) return ["script.syntax", text, line];
      if (phase === 1) return ["script.input-invalid", "input is not valid JSON: " + text, 0];
      if (phase === 3) return ["script.not-json", "output could not be serialised: " + text, line];
      return ["script.runtime", text, line];
    }
    // QuickJS may report an allocation failure inside its own out-of-memory
    // path as a thrown null; the host tells that apart from "throw null" by
    // whether the module's memory refused to grow (evaluator.ts).
    if (e === null) return ["script.runtime", "uncaught null", 0];
    const t = typeof e;
    if (t === "string" || t === "number" || t === "boolean") return ["script.runtime", "uncaught " + clip(StringC(e)), 0];
    return ["script.runtime", "uncaught non-Error value (" + t + ")", 0];
  };

  // QuickJS's Function constructor parses header + body as one text, so a
  // body can close the wrapper early ("}); ...; (function () {"). Such code
  // runs in an indirect-eval scope (no bindings survive, the global object is
  // frozen) under the same limits, and is then detected: the function we get
  // back must print as exactly the wrapper around this source, which code
  // nested inside the source can never do (it would have to contain itself).
  const build = (body) => {
    const fn = new RealFunction("input", body);
    if (typeof fn !== "function" || apply(fnToString, fn, []) !== "function anonymous(input\n) {\n" + body + "\n}") {
      throw new Reject("script.syntax", "SyntaxError: the script closes its function wrapper");
    }
    return fn;
  };
  const compileRaw = (source) => {
    try {
      return [build("\"use strict\";return (\n" + source + "\n);"), true];
    } catch (e) { if (e instanceof Reject) throw e; /* not an expression; try a function body */ }
    return [build("\"use strict\";\n" + source + "\n"), false];
  };

  // Compiled scripts are cached by source text. The compiled function is
  // never reachable from script code (strict mode, anonymous, called with an
  // undefined receiver), so sharing it across evaluations shares no state.
  const cache = new Map();
  const cacheEntriesMax = 64, cacheSourceCharsMax = 16384;
  const compile = (source) => {
    try {
      let entry = cache.get(source);
      if (entry === undefined) {
        entry = freeze(compileRaw(source));
        freeze(entry[0]);
        if (source.length <= cacheSourceCharsMax) {
          if (cache.size >= cacheEntriesMax) cache.clear();
          cache.set(source, entry);
        }
      }
      return entry;
    } catch (e) {
      return describe(e, 0);
    }
  };

  const exec = (entry, inputText, outputUnitsMax) => {
    let phase = 1;
    boundsReset();
    try {
      const input = jsonParse(inputText);
      phase = 2;
      let result = apply(entry[0], undefined, [input]);
      if (entry[1] && typeof result === "function") result = apply(result, undefined, [input]);
      phase = 3;
      const text = jsonStringify(result, replacer);
      if (text === undefined) reject("undefined");
      if (text.length > outputUnitsMax) return ["script.output-too-large", "output is larger than " + outputUnitsMax + " bytes", 0];
      return text;
    } catch (e) {
      return describe(e, phase);
    } finally {
      boundsFlush();
    }
  };
  const drain = () => { for (;;) { /* stopped by the host's interrupt handler */ } };
  return [compile, exec, drain];
})`;

/**
 * Fuel for work done inside C built-ins.
 *
 * QuickJS calls the interrupt handler (which counts fuel) only from the
 * interpreter and the regexp backtracker; a built-in written in C runs to
 * its end without it. `'a'.repeat(1e6).indexOf('a'.repeat(1e4) + 'b')` made
 * 10^10 character comparisons (~12 s) with no fuel charged. The prelude
 * therefore wraps the built-ins whose work can grow with the product of two
 * sizes (search, split, replace, regular-expression matching) or with a size
 * the script picks (repeat, padStart/padEnd, join), and charges their work to
 * the same fuel budget, in "units" (one character compared or produced, one
 * element visited; `builtinUnitsPerFuel` units are one fuel).
 *
 * A call whose worst case is at least `builtinUnitsPrecheck` units is charged
 * its worst case *before* it runs, through the host function `charge`, so a
 * call the budget cannot pay for never starts; the part it did not use
 * (indexOf found its match early) is refunded afterwards. Smaller calls run
 * first and are charged what they did, summed in the guest and passed to the
 * host every `builtinUnitsFlush` units and at the end of the evaluation. All
 * of it is a function of the script and its input only: fuel stays
 * deterministic. When the budget is spent, `charge` answers true, the
 * wrapper throws, and the host ends the evaluation with `script.fuel` at the
 * next poll, whether or not the script catches the error.
 *
 * The originals are captured in this closure; the wrapped prototypes are
 * frozen with every other intrinsic afterwards, so scripts cannot reach or
 * replace them.
 */
import * as L from './limits.js';

/** A function expression taking the host's `charge(units) -> exhausted`; returns `[reset, flush]`. */
export const builtinBoundsSource = String.raw`(function (charge) {
  "use strict";
  const O = Object, apply = Reflect.apply, defProp = O.defineProperty, getDesc = O.getOwnPropertyDescriptor;
  const StringC = String, isArray = Array.isArray, TypeErrorC = TypeError, InternalErrorC = InternalError;
  const SP = String.prototype, AP = Array.prototype, RP = RegExp.prototype;
  const sourceOf = getDesc(RP, "source").get;
  const symMatch = Symbol.match;
  const precheck = ${L.builtinUnitsPrecheck}, flushAt = ${L.builtinUnitsFlush};
  // Relative costs measured with quickjs-emscripten 0.32.0 (see limits.ts): a search
  // position costs about 8 character comparisons on top of the needle, an array
  // element visited about 4, an element joined (converted to text) about 32, a
  // character produced by repeat or padStart/padEnd about 8 (24 ns).
  const perPosition = 8, perElement = 4, perJoinedElement = 32, perProduced = 8;
  let pending = 0;
  // Once the budget is spent every wrapped call refuses at once, however small,
  // until the host's next poll ends the evaluation.
  let exhausted = false;

  const stop = () => { exhausted = true; throw new InternalErrorC("fuel exhausted in a built-in"); };
  const pay = (units) => {
    pending += units;
    if (pending >= flushAt) { const p = pending; pending = 0; if (charge(p)) stop(); }
  };
  // Worst case charged before the call when large; returns what was charged up front.
  const before = (worst) => {
    if (exhausted) stop();
    if (worst < precheck) return 0;
    if (charge(worst)) stop();
    return worst;
  };
  const after = (prepaid, used) => { pay(used - prepaid); };

  const thisString = (v, name) => {
    if (v === null || v === undefined) throw new TypeErrorC("String.prototype." + name + " called on null or undefined");
    return typeof v === "string" ? v : StringC(v);
  };
  const isRegExpLike = (v) => v !== null && typeof v === "object" && v[symMatch] !== undefined && v[symMatch] !== false;
  // A search argument as the built-in would convert it; objects are converted once, here.
  const needle = (v) => (typeof v === "string" ? v : v !== null && typeof v === "object" ? StringC(v) : v);
  const lengthOf = (v) => (typeof v === "string" ? v.length : v === undefined ? 9 : StringC(v).length);
  const patternLength = (p) => {
    if (typeof p === "string") return p.length;
    if (p === undefined) return 1;
    if (p !== null && typeof p === "object") {
      try { return apply(sourceOf, p, []).length; } catch (_) { return 1; }
    }
    return lengthOf(p);
  };

  const wrap = (proto, name, make) => {
    const original = proto[name];
    const wrapped = make(original);
    defProp(wrapped, "name", { value: name });
    defProp(wrapped, "length", { value: original.length });
    defProp(proto, name, { value: wrapped, writable: false, enumerable: false, configurable: false });
  };
  // A method (not constructible, own this) built from an arrow that takes this explicitly.
  const method = (f) => ({ m(...args) { return f(this, args); } }).m;

  // indexOf / lastIndexOf: up to (n - m + 1) * m comparisons; refund what was not needed.
  for (const name of ["indexOf", "lastIndexOf"]) {
    wrap(SP, name, (original) => method((self, args) => {
      const s = thisString(self, name);
      const search = needle(args[0]);
      const m = lengthOf(search);
      const n = s.length;
      const worst = m === 0 || m > n ? 1 : (n - m + 1) * (m + perPosition);
      const prepaid = before(worst);
      const rest = [search];
      for (let i = 1; i < args.length; i++) rest.push(args[i]);
      const r = apply(original, s, rest);
      let used = worst;
      if (r >= 0 && m > 0) used = (name === "indexOf" ? r + 1 : n - r) * (m + perPosition);
      after(prepaid, used > worst ? worst : used);
      return r;
    }));
  }
  // includes / startsWith / endsWith: a RegExp argument must still throw its TypeError.
  for (const name of ["includes", "startsWith", "endsWith"]) {
    wrap(SP, name, (original) => method((self, args) => {
      const s = thisString(self, name);
      const search = isRegExpLike(args[0]) ? args[0] : needle(args[0]);
      const m = typeof search === "string" ? search.length : 1;
      const n = s.length;
      const worst = name === "includes" ? (m === 0 || m > n ? 1 : (n - m + 1) * (m + perPosition)) : (m > n ? 1 : m);
      const prepaid = before(worst);
      const rest = [search];
      for (let i = 1; i < args.length; i++) rest.push(args[i]);
      const r = apply(original, s, rest);
      after(prepaid, worst);
      return r;
    }));
  }
  // Pattern methods: a scan of the string per pattern character, plus the output.
  for (const name of ["split", "replace", "replaceAll", "search", "match", "matchAll"]) {
    wrap(SP, name, (original) => method((self, args) => {
      const s = thisString(self, name);
      const pattern = args[0];
      const k = patternLength(pattern);
      const n = s.length;
      const worst = (n + 1) * (k + perPosition);
      const prepaid = before(worst);
      const r = apply(original, s, args);
      after(prepaid, worst + (typeof r === "string" ? r.length : 0));
      return r;
    }));
  }
  // Methods whose output size the script chooses: charged for the output before it is built.
  wrap(SP, "repeat", (original) => method((self, args) => {
    const s = thisString(self, "repeat");
    const count = +args[0];
    const worst = count > 0 && count !== 1 / 0 ? s.length * count * perProduced : 1;
    const prepaid = before(worst);
    const r = apply(original, s, args);
    after(prepaid, worst);
    return r;
  }));
  for (const name of ["padStart", "padEnd"]) {
    wrap(SP, name, (original) => method((self, args) => {
      const s = thisString(self, name);
      const target = +args[0];
      const worst = target > s.length && target !== 1 / 0 ? (target - s.length) * perProduced : 1;
      const prepaid = before(worst);
      const r = apply(original, s, args);
      after(prepaid, worst);
      return r;
    }));
  }
  // Arrays: a visit per element (join also pays for the text it builds).
  for (const name of ["join", "indexOf", "lastIndexOf", "includes"]) {
    wrap(AP, name, (original) => method((self, args) => {
      const len = isArray(self) ? self.length : 0;
      const worst = len * (name === "join" ? perJoinedElement : perElement);
      const prepaid = before(worst);
      const r = apply(original, self, args);
      after(prepaid, worst + (typeof r === "string" ? r.length : 0));
      return r;
    }));
  }

  const reset = () => { pending = 0; exhausted = false; };
  const flush = () => { const p = pending; pending = 0; if (p !== 0) charge(p); };
  return [reset, flush];
})`;

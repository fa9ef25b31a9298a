/**
 * Synchronous, deterministic evaluation of untrusted scripts in QuickJS.
 *
 * A script is a function body (`return input.items.length`) or an expression
 * (`(input) => input.items.length`, or `input.items.length`) over one JSON
 * input; it returns JSON. `evaluate` is synchronous because the engine calls
 * it from inside a synchronous WebAssembly import. Loading the QuickJS module
 * is the only asynchronous step (`ScriptEvaluator.create`).
 *
 * Call order: `create` once, then any number of `evaluate` / `checkSyntax`,
 * then `dispose`. Not re-entrant (scripts have no host functions, so nothing
 * can call back in).
 *
 * No Node built-ins here: the file is bundled for browsers too.
 */
import { DefaultIntrinsics, RELEASE_SYNC, newQuickJSWASMModuleFromVariant, newVariant } from 'quickjs-emscripten';
import type { CustomizeVariantOptions, QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSSyncVariant, QuickJSWASMModule } from 'quickjs-emscripten';
import { runtimePoisoningCodes, scriptError, type ScriptError } from './errors.js';
import { checkInput, checkSourceShape, lineCount, readResult } from './guest-results.js';
import * as L from './limits.js';
import { locatePollCounter, writePollCounter } from './poll-counter.js';
import { preludeSource } from './prelude.js';
import { defaultScriptLimits, isScriptError, resolveScriptLimits, type ScriptLimits } from './script-limits.js';
import { evaluationCeilingBytes, MemoryGuard } from './wasm-memory.js';

export type { ScriptError } from './errors.js';
export { defaultScriptLimits, resolveScriptLimits, type ScriptLimits } from './script-limits.js';

export type ScriptOutcome =
  | { ok: true; /** JSON text */ output: string; fuelUsed: number }
  | { ok: false; error: ScriptError };

/**
 * Supplies the base QuickJS sync variant (default: quickjs-emscripten's
 * RELEASE_SYNC). Return a base variant, not one made with `newVariant`: the
 * evaluator applies `newVariant` itself to add its bounded memory, and a
 * second layer would drop it (checked at load).
 */
export type VariantLoader = () => QuickJSSyncVariant | Promise<QuickJSSyncVariant>;

/** Options passed to quickjs-emscripten's `newVariant` (where the .wasm lives, a precompiled module, ...). */
export type VariantOptions = Omit<CustomizeVariantOptions, 'wasmMemory'>;

export interface ScriptEvaluatorOptions {
  /** Defaults for every evaluation; each `evaluate` call may override them within the maxima. */
  limits?: Partial<ScriptLimits>;
  /** Where the QuickJS variant comes from (default: quickjs-emscripten's RELEASE_SYNC). */
  loadVariant?: VariantLoader;
  /** E.g. `{ wasmLocation: '/assets/emscripten-module.wasm' }` in a browser. */
  variantOptions?: VariantOptions;
  /**
   * How QuickJS's poll counter is reset before each run so fuel is
   * deterministic: 'auto' writes the located field (falls back to 'loop');
   * 'loop' always runs a loop to the next handler call (slower, never touches
   * QuickJS memory). Both give the same fuel counts.
   */
  pollCounterReset?: 'auto' | 'loop';
  /**
   * Milliseconds of a monotonic clock, read by the wall-clock failsafe
   * (default `performance.now`, or `Date.now` where there is none). Only the
   * failsafe reads it; fuel never depends on time.
   */
  clock?: () => number;
}

export interface ScriptEvaluatorDiagnostics {
  /** 'direct' when the poll counter is written in place, 'loop' when it is drained. */
  pollCounterReset: 'direct' | 'loop';
  /** Evaluations run on the current context. */
  evaluationsOnContext: number;
  /** Current size of the module's linear memory. */
  wasmMemoryBytes: number;
}

/** A loaded QuickJS module and the guard on its linear memory. */
interface LoadedModule {
  quickjs: QuickJSWASMModule;
  guard: MemoryGuard;
}

const intrinsics = { ...DefaultIntrinsics, Date: false };
const emptyInput = 'null';

/** One QuickJS runtime + context with the prelude applied. */
interface Instance {
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  compile: QuickJSHandle;
  exec: QuickJSHandle;
  drain: QuickJSHandle;
  /** Byte address of QuickJS's poll counter in linear memory, when it could be located (see locatePollCounter). */
  counterAddress: number | undefined;
  memory: WebAssembly.Memory;
  /** Evaluations run on this context; 0 means it is as fresh as a new one. */
  evaluations: number;
  /** True when QuickJS's poll counter was just reset by an interrupt-handler call. */
  counterFresh: boolean;
}

/** count: a script runs under fuel; drain: stop at the next poll; setup: the prelude runs unmetered. */
type HandlerMode = 'count' | 'drain' | 'setup';

export class ScriptEvaluator {
  private module: LoadedModule | undefined;
  private spare: LoadedModule | undefined;
  private spareLoading = false;
  private instance: Instance | undefined;
  private disposed = false;
  private mode: HandlerMode = 'count';
  /** Interrupt-handler calls of the current evaluation. */
  private fuelUsed = 0;
  /** Units of built-in work charged in the current evaluation (builtin-bounds.ts). */
  private builtinUnits = 0;
  private fuelLimit = 0;
  private fuelExhausted = false;
  /** Clock reading past which the current evaluation is ended (script.wall-time). */
  private deadline = Number.POSITIVE_INFINITY;
  private wallTimeExceeded = false;

  private constructor(
    private readonly loadVariant: VariantLoader,
    private readonly defaults: ScriptLimits,
    private readonly pollCounterMode: 'auto' | 'loop',
    private readonly variantOptions: VariantOptions,
    private readonly clock: () => number,
  ) {}

  static async create(options: ScriptEvaluatorOptions = {}): Promise<ScriptEvaluator> {
    const defaults = resolveScriptLimits(defaultScriptLimits, options.limits);
    if (isScriptError(defaults)) throw new RangeError(defaults.message);
    const evaluator = new ScriptEvaluator(
      options.loadVariant ?? (() => RELEASE_SYNC),
      defaults,
      options.pollCounterReset ?? 'auto',
      options.variantOptions ?? {},
      options.clock ?? defaultClock,
    );
    // A spare module is kept loaded so that a module discarded after a host
    // failure can be replaced synchronously, inside `evaluate`.
    [evaluator.module, evaluator.spare] = await Promise.all([evaluator.loadModule(), evaluator.loadModule()]);
    evaluator.ensureInstance();
    return evaluator;
  }

  /** The limits used when `evaluate` is given none. */
  get limits(): Readonly<ScriptLimits> {
    return this.defaults;
  }

  diagnostics(): ScriptEvaluatorDiagnostics {
    this.assertLive();
    const instance = this.instance;
    return {
      pollCounterReset: instance?.counterAddress !== undefined ? 'direct' : 'loop',
      evaluationsOnContext: instance?.evaluations ?? 0,
      wasmMemoryBytes: this.module?.guard.bytes ?? 0,
    };
  }

  /** Runs `source` over the JSON text `inputJson`. Never throws for anything a script or input can do. */
  evaluate(source: string, inputJson: string, limits?: Partial<ScriptLimits>): ScriptOutcome {
    this.assertLive();
    const resolved = resolveScriptLimits(this.defaults, limits);
    if (isScriptError(resolved)) return { ok: false, error: resolved };
    const sourceProblem = checkSourceShape(source);
    if (sourceProblem) return { ok: false, error: sourceProblem };
    const inputProblem = checkInput(inputJson);
    if (inputProblem) return { ok: false, error: inputProblem };

    let outcome = this.runOnce(source, inputJson, resolved, false);
    // Heap exhaustion depends slightly on what earlier evaluations left in a
    // reused runtime and module (atoms, allocator fragmentation). Re-run on a
    // fresh module (a fresh runtime when no spare is ready) so the verdict is
    // the one every fresh host would reach.
    if (!outcome.ok && outcome.error.code === 'script.memory' && outcome.warm) {
      this.useSpareModule();
      outcome = this.runOnce(source, inputJson, resolved, false);
    }
    // Linear memory never shrinks: a module that grew is dropped now, not kept for later scripts.
    if ((this.module?.guard.bytes ?? 0) > L.wasmMemoryBytesRetainMax) this.useSpareModule();
    return outcome.ok ? { ok: true, output: outcome.output, fuelUsed: outcome.fuelUsed } : { ok: false, error: outcome.error };
  }

  /** Parses `source` without running it. Returns the syntax error, if any. */
  checkSyntax(source: string): ScriptError | undefined {
    this.assertLive();
    const sourceProblem = checkSourceShape(source);
    if (sourceProblem) return sourceProblem;
    // Compiling runs no script code unless the source closes its wrapper
    // (see prelude.ts); a small fuel budget bounds that case.
    const outcome = this.runOnce(source, emptyInput, { ...this.defaults, fuel: L.syntaxCheckFuel }, true);
    return outcome.ok ? undefined : outcome.error;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.dropInstance();
    this.module = undefined;
    this.spare = undefined;
  }

  // ---------------------------------------------------------------------

  private assertLive(): void {
    if (this.disposed) throw new Error('ScriptEvaluator used after dispose()');
  }

  private async loadModule(): Promise<LoadedModule> {
    const base = await this.loadVariant();
    const wasmMemory = new WebAssembly.Memory({
      initial: L.wasmMemoryBytesInitial / L.wasmPageBytes,
      maximum: L.wasmMemoryBytesMax / L.wasmPageBytes,
    });
    const module = await newQuickJSWASMModuleFromVariant(newVariant(base, { ...this.variantOptions, wasmMemory }));
    // The bound on linear memory is the sandbox's last line against heap bugs; never run without it.
    if (module.getWasmMemory() !== wasmMemory) throw new Error('the QuickJS variant did not use the bounded WebAssembly.Memory');
    return { quickjs: module, guard: new MemoryGuard(wasmMemory) };
  }

  /** Loads a spare module in the background, so a discarded one can be replaced synchronously. */
  private prepareSpare(): void {
    if (this.spare || this.spareLoading || this.disposed) return;
    this.spareLoading = true;
    this.loadModule().then(
      (m) => {
        this.spareLoading = false;
        if (!this.disposed) this.spare = m;
      },
      () => {
        this.spareLoading = false;
      },
    );
  }

  /**
   * Replaces the current module with the spare (a fresh module at its initial
   * size) when one is ready; the old module and its grown memory are dropped.
   * Without a spare only the runtime is dropped.
   */
  private useSpareModule(): void {
    this.dropInstance();
    if (this.spare) {
      this.module = this.spare;
      this.spare = undefined;
    }
    this.prepareSpare();
  }

  private ensureInstance(): Instance {
    if (this.instance) return this.instance;
    const module = this.module ?? this.spare;
    if (!module) throw new SandboxUnavailable();
    if (module === this.spare) {
      this.module = module;
      this.spare = undefined;
      this.prepareSpare();
    }
    module.guard.disarm();
    const runtime = module.quickjs.newRuntime();
    let context: QuickJSContext | undefined;
    try {
      runtime.setMaxStackSize(L.stackBytesMax);
      runtime.setMemoryLimit(-1);
      runtime.setInterruptHandler(() => this.onInterrupt());
      context = runtime.newContext({ intrinsics });
      this.mode = 'setup';
      const setup = context.unwrapResult(context.evalCode(preludeSource, 'prelude.js'));
      const charge = context.newFunction('charge', (units) => (this.onCharge(context!.getNumber(units)) ? context!.true : context!.false));
      const evaluated = context.callFunction(setup, context.undefined, charge);
      charge.dispose();
      setup.dispose();
      this.mode = 'count';
      const fns = context.unwrapResult(evaluated);
      const compile = context.getProp(fns, 0);
      const exec = context.getProp(fns, 1);
      const drain = context.getProp(fns, 2);
      fns.dispose();
      const instance: Instance = {
        runtime, context, compile, exec, drain, evaluations: 0, counterFresh: false, counterAddress: undefined, memory: module.guard.memory,
      };
      if (this.pollCounterMode === 'auto') {
        instance.counterAddress = locatePollCounter({
          context,
          memory: instance.memory,
          drain: () => {
            instance.counterFresh = false;
            this.resetPollCounter(instance);
          },
          unmetered: (fn) => {
            this.mode = 'setup';
            try {
              fn();
            } finally {
              this.mode = 'count';
            }
          },
        });
        if (instance.counterAddress !== undefined) instance.counterFresh = true;
      }
      this.instance = instance;
      return instance;
    } catch (e) {
      context?.dispose();
      runtime.dispose();
      throw e;
    }
  }

  private dropInstance(): void {
    const instance = this.instance;
    this.instance = undefined;
    if (!instance) return;
    try {
      instance.compile.dispose();
      instance.exec.dispose();
      instance.drain.dispose();
      instance.context.dispose();
      instance.runtime.dispose();
    } catch {
      // A runtime that failed badly may not free cleanly; the module is dropped with it.
      this.module = undefined;
      this.prepareSpare();
    }
  }

  private onInterrupt(): boolean {
    if (this.mode === 'drain') return true;
    if (this.mode === 'setup') return false;
    this.fuelUsed++;
    return this.mustStop();
  }

  /** Built-in work reported by the prelude; answers whether the evaluation must stop. */
  private onCharge(units: number): boolean {
    if (this.mode !== 'count' || !Number.isFinite(units)) return this.mode === 'count';
    this.builtinUnits += units;
    return units > 0 ? this.mustStop() : this.fuelExhausted || this.wallTimeExceeded;
  }

  private totalFuel(): number {
    return this.fuelUsed + Math.max(0, Math.floor(this.builtinUnits / L.builtinUnitsPerFuel));
  }

  private mustStop(): boolean {
    if (this.totalFuel() > this.fuelLimit) this.fuelExhausted = true;
    // The failsafe: fuel decides, the clock only ends what fuel failed to.
    if (this.clock() > this.deadline) this.wallTimeExceeded = true;
    return this.fuelExhausted || this.wallTimeExceeded;
  }

  /** Leaves QuickJS's per-context poll counter at its reset value, so fuel counts from the same phase every time. */
  private resetPollCounter(instance: Instance): void {
    if (instance.counterAddress !== undefined) {
      writePollCounter(instance.memory, instance.counterAddress);
      instance.counterFresh = true;
      return;
    }
    if (instance.counterFresh) return;
    this.mode = 'drain';
    try {
      const r = instance.context.callFunction(instance.drain, instance.context.undefined);
      r.dispose();
    } finally {
      this.mode = 'count';
    }
    instance.counterFresh = true;
  }

  private runOnce(
    source: string,
    inputJson: string,
    limits: ScriptLimits,
    compileOnly: boolean,
  ): ({ ok: true; output: string; fuelUsed: number } | { ok: false; error: ScriptError }) & { warm: boolean } {
    let instance: Instance;
    const ceilingBytes = evaluationCeilingBytes(limits.memoryBytes);
    try {
      // A module grown past this evaluation's ceiling by an earlier one would
      // give this script more memory than it asked for: use a fresh one.
      if ((this.module?.guard.bytes ?? 0) > ceilingBytes && this.spare) this.useSpareModule();
      instance = this.ensureInstance();
    } catch {
      this.prepareSpare();
      return { ok: false, error: scriptError('script.sandbox-failure', 'the sandbox is being rebuilt; retry'), warm: false };
    }
    const warm = instance.evaluations > 0;
    const { context, runtime } = instance;
    const guard = this.module!.guard;
    const handles: QuickJSHandle[] = [];
    try {
      this.fuelUsed = 0;
      this.builtinUnits = 0;
      this.fuelLimit = limits.fuel;
      this.fuelExhausted = false;
      this.wallTimeExceeded = false;
      this.deadline = this.clock() + L.wallTimeMsBase + limits.fuel * L.wallTimeMsPerFuel;
      instance.evaluations++;
      guard.arm(ceilingBytes);
      runtime.setMaxStackSize(limits.stackBytes);
      // Compiling runs no script code unless the source closes its wrapper
      // (prelude.ts); it is metered like the run, from a reset counter when
      // the counter can be reset for free.
      if (instance.counterAddress !== undefined) this.resetPollCounter(instance);
      const sourceHandle = context.newString(source);
      handles.push(sourceHandle);
      const compiled = context.callFunction(instance.compile, context.undefined, sourceHandle);
      instance.counterFresh = false;
      let outcome: { ok: true; output: string; fuelUsed: number } | { ok: false; error: ScriptError };
      if (compiled.error) {
        outcome = { ok: false, error: this.classifyThrown(context, compiled.error) };
        compiled.error.dispose();
        if (this.fuelExhausted) instance.counterFresh = true;
      } else {
        const entry = compiled.value;
        handles.push(entry);
        const length = context.getProp(entry, 'length').consume((h) => context.getNumber(h));
        if (length !== 2) {
          outcome = readResult(context, entry, limits.outputBytes, 0, lineCount(source));
        } else if (compileOnly) {
          outcome = { ok: true, output: '', fuelUsed: 0 };
        } else {
          // Count the run's fuel from the same phase every time, whatever compiling used.
          this.resetPollCounter(instance);
          this.fuelUsed = 0;
          this.builtinUnits = 0;
          handles.push(context.newString(inputJson), context.newNumber(limits.outputBytes));
          const result = context.callFunction(instance.exec, context.undefined, ...handles.slice(1));
          instance.counterFresh = false;
          const fuelUsed = this.totalFuel();
          if (result.error) {
            outcome = { ok: false, error: this.classifyThrown(context, result.error) };
            result.error.dispose();
            if (this.fuelExhausted) instance.counterFresh = true;
          } else {
            outcome = readResult(context, result.value, limits.outputBytes, fuelUsed, lineCount(source));
            result.value.dispose();
          }
        }
      }
      for (const h of handles) h.dispose();
      guard.disarm();
      // A script may catch the error a built-in throws when fuel runs out and
      // return before the next poll: the budget decides the outcome, not the script.
      if (this.wallTimeExceeded) {
        outcome = { ok: false, error: scriptError('script.wall-time', 'the evaluation passed its wall-clock failsafe') };
        instance.counterFresh = false;
      } else if (this.fuelExhausted && (outcome.ok || outcome.error.code !== 'script.fuel')) {
        outcome = { ok: false, error: scriptError('script.fuel', `fuel exhausted (limit ${this.fuelLimit})`) };
      }
      // A bare null thrown when QuickJS failed to allocate its own error, not a script's "throw null".
      if (!outcome.ok && outcome.error.code === 'script.runtime' && outcome.error.message === 'uncaught null' && guard.refused) {
        outcome = { ok: false, error: scriptError('script.memory', 'InternalError: out of memory') };
      }
      // Promise jobs left behind (async code, import()) would run in a later
      // evaluation's time or pile up; a fresh runtime discards them.
      if (!outcome.ok && runtimePoisoningCodes.has(outcome.error.code)) this.dropInstance();
      else if (runtime.hasPendingJob()) this.dropInstance();
      else if (instance.evaluations >= L.evaluationsPerContextMax) this.dropInstance();
      return { ...outcome, warm };
    } catch (e) {
      guard.disarm();
      // A host-side failure (wasm trap, host stack overflow) may leave the
      // module inconsistent: discard the whole module, not just the runtime.
      this.instance = undefined;
      this.module = undefined;
      this.prepareSpare();
      const detail = e instanceof Error ? `${e.name}: ${e.message}` : 'unknown failure';
      const code = e instanceof RangeError ? 'script.stack' : 'script.sandbox-failure';
      return { ok: false, error: scriptError(code, `sandbox failure (${detail.slice(0, 200)})`), warm };
    }
  }

  private classifyThrown(context: QuickJSContext, error: QuickJSHandle): ScriptError {
    if (this.wallTimeExceeded) return scriptError('script.wall-time', 'the evaluation passed its wall-clock failsafe');
    if (this.fuelExhausted) return scriptError('script.fuel', `fuel exhausted (limit ${this.fuelLimit})`);
    let message = '';
    try {
      const dumped = context.dump(error) as { message?: unknown } | null;
      message = typeof dumped?.message === 'string' ? dumped.message : '';
    } catch {
      message = '';
    }
    if (message === 'stack overflow') return scriptError('script.stack', 'InternalError: stack overflow');
    // Anything else escaping the guest's own catch is a failure to allocate while reporting.
    return scriptError('script.memory', message ? `InternalError: ${message}` : 'out of memory');
  }
}

class SandboxUnavailable extends Error {}

const defaultClock: () => number =
  typeof globalThis.performance?.now === 'function' ? () => globalThis.performance.now() : () => Date.now();


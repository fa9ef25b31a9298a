// One instance of the engine component with the host's imports bound to it. Imports are staged
// during a call and handed back to the caller, which commits first and dispatches after.
//
// A trap kills a component instance. Every call is guarded: on a trap the instance is marked
// dead, the host logs it, and a fresh instance is built at once in the background (hot runs are
// rebuilt from the journal on their next activation). A synchronous call that comes before the
// fresh instance is ready fails with `engine.reviving`; `ready()` waits for it.
//
// Requests are serialised before they cross: a value that is not JSON fails with a typed error
// and never kills the instance. Templates nested deeper than the engine's parser can take are
// refused the same way (`assertTemplateJson`).
//
// A host may load its script sandbox lazily (`scripts`): a call that would evaluate or check a
// script while it is not loaded fails with `sandbox.not-loaded` before the engine changes
// anything (a plan or template that names `core.script@`), and `withScripts` loads it and calls
// again. Runs, templates and replays without scripts never load it.
import { GuestHeap, type Realloc } from './guest-heap.js';
import { assertTemplateJson } from './json-input.js';
import type { CommitEntry, RunTail } from './store.js';
import type { ScriptLimits } from '../../engine/limits.js';
import type { ActivationSummary, ExecutionPlan, GatewayRequest, HostNodeDefinition, HostLog, ValidationReport } from './types.js';
import { CodedError } from '../../engine/protocol/coded-error.js';

export type { ScriptLimits };

/** What a host provides to the engine, synchronously. */
export interface EngineHostImports {
  load(runId: string): RunTail | undefined;
  evaluateScript(source: string, inputJson: string, limits: ScriptLimits): { ok: true; output: string; fuelUsed: number } | { ok: false; error: { code: string; message: string; line?: number } };
  checkScriptSyntax(source: string): { code: string; message: string; line?: number } | undefined;
  log: HostLog;
  /** Hex SHA-256 of a string's UTF-8 bytes (the `digest` import); a JavaScript one when absent. */
  sha256Hex?: (text: string) => string;
  /** A sandbox loaded on first need; absent means the script imports are always ready. */
  scripts?: { readonly loaded: boolean; load(): Promise<void> };
}

/** Whether a plan, template or replay request in JSON text can evaluate or check a script. */
export function needsScripts(json: string): boolean {
  return json.includes('"core.script@');
}

/** Loads the transpiled component: `instantiate` from dist/component/engine.js and its core modules. */
export interface ComponentLoader {
  instantiate: (getCoreModule: (path: string) => Promise<WebAssembly.Module>, imports: Record<string, unknown>) => Promise<any>;
  getCoreModule(path: string): Promise<WebAssembly.Module>;
}

export interface StagedWork {
  commits: CommitEntry[];
  requests: GatewayRequest[];
  cancels: { invocationId: string; reason: string }[];
}

/** One activation of a run: its facts, and for a new run its plan. */
export interface ActivationInput {
  runId: string;
  now: number;
  facts: unknown[];
  actor?: string;
  correlation?: unknown;
  plan?: ExecutionPlan;
  templateKey?: string;
  commitBytesMax?: number;
}

/** What one activation of `activateBatch` came to: as `activate` would have returned or thrown. */
export type BatchOutcome = ({ ok: true; summary: ActivationSummary } & StagedWork) | { ok: false; error: EngineCallError };

/** An engine call that returned its declared error. */
export class EngineCallError extends CodedError {
  constructor(code: string, message: string, detail: unknown) {
    super(code, message, detail);
    this.name = 'EngineCallError';
  }
}

/** A call needs the script sandbox, which is not loaded yet; `withScripts` loads it and calls again. */
export class SandboxNotLoadedError extends EngineCallError {
  declare readonly code: 'sandbox.not-loaded';

  constructor(what: string) {
    super('sandbox.not-loaded', `${what} needs the script sandbox, which is not loaded yet; await engine.loadScripts() (or call through withScripts) and retry`, undefined);
    this.name = 'SandboxNotLoadedError';
  }
}

/** The instance trapped; it has been discarded. */
export class EngineTrapError extends CodedError {
  declare readonly code: 'engine.trap';

  constructor(message: string) {
    super('engine.trap', message);
    this.name = 'EngineTrapError';
  }
}

/** A fresh instance is being built after a trap; the call may be retried once `ready()` resolves. */
export class EngineRevivingError extends CodedError {
  declare readonly code: 'engine.reviving';

  constructor(message: string) {
    super('engine.reviving', message);
    this.name = 'EngineRevivingError';
  }
}

/** A request that cannot be serialised to JSON; it never reached the engine. */
function encodeRequest(name: string, request: unknown): string {
  try {
    return JSON.stringify(request);
  } catch (err) {
    throw new EngineCallError('engine.request-not-json', `the ${name} request cannot be serialised to JSON: ${err instanceof Error ? err.message : String(err)}`, undefined);
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The `digest` import where the host has no native SHA-256 of its own (a page). @noble/hashes is
 * loaded by the first instance that needs it, not with this module: a Node process passes
 * `node:crypto`'s and never loads it.
 */
async function portableSha256Hex(): Promise<(text: string) => string> {
  const { sha256 } = await import('@noble/hashes/sha256');
  return (text) => Array.from(sha256(encoder.encode(text)), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The WIT `engine-error`: its `detail` is JSON text, possibly empty. */
interface EngineErrorPayload {
  code: string;
  message: string;
  detail?: string;
}

function engineError(p: EngineErrorPayload): EngineCallError {
  let detail: unknown;
  if (p.detail && p.detail.length > 0) {
    try {
      detail = JSON.parse(p.detail);
    } catch {
      detail = undefined;
    }
  }
  return new EngineCallError(p.code, p.message, detail);
}

/** A line of `activate-batch`'s result: outcome, the counts of staged commits, requests and cancels, then JSON. */
const batchLine = /^(ok|err) (\d+) (\d+) (\d+) /;

function errorWithPayload(payload: unknown): Error {
  const err = new Error(typeof (payload as { message?: unknown }).message === 'string' ? (payload as { message: string }).message : 'error');
  (err as Error & { payload: unknown }).payload = payload;
  return err;
}

/**
 * The transpiled bindings (`--import-bindings hybrid`) ask an import for a canonical-ABI
 * lowering of its own under this symbol, given the component's memory; they call it in place of
 * their generic import path, which creates a task and a subtask around every call. An import is
 * given one only when its parameters and results are strings, integers and their options and
 * results, whose layout is fixed by the canonical ABI of wit/.
 */
const cabiLower = Symbol.for('cabiLower');

/** Guest heap a recorded or inspect replay needs per byte of its request's text. */
const replayHeapPerRequestByte = 8;

function withRawLowering<F extends (...args: any[]) => unknown>(fn: F, lower: (memory: WebAssembly.Memory, realloc: Realloc) => (...flat: number[]) => void): F {
  return Object.assign(fn, { [cabiLower]: ({ memory, realloc }: { memory: WebAssembly.Memory; realloc: Realloc }) => lower(memory, realloc) });
}

/** A string result of a raw lowering: its UTF-8 in memory the component allocates; [pointer, length]. */
function lowerString(memory: WebAssembly.Memory, realloc: Realloc, text: string): [number, number] {
  const bytes = encoder.encode(text);
  if (bytes.length === 0) return [1, 0];
  const ptr = realloc(0, 0, 1, bytes.length);
  new Uint8Array(memory.buffer, ptr, bytes.length).set(bytes);
  return [ptr, bytes.length];
}

/** A string argument of a raw lowering: UTF-8 in the component's memory. */
function utf8Text(memory: WebAssembly.Memory, ptr: number, len: number): string {
  return decoder.decode(new Uint8Array(memory.buffer, ptr, len));
}

/**
 * The bytes of a string argument, copied out of the component's memory. Its text comes from
 * the engine's `JSON.stringify` (well-formed UTF-8), so these are the bytes that decoding and
 * encoding it again would give.
 */
function utf8Bytes(memory: WebAssembly.Memory, ptr: number, len: number): Uint8Array {
  return new Uint8Array(memory.buffer, ptr, len).slice();
}

export class EngineInstance {
  private exports: any;
  private staged: StagedWork = { commits: [], requests: [], cancels: [] };
  private instantiations = 0;
  /** The instantiation under way (the first one, or the one started by a trap). */
  private reviving: Promise<void> | undefined;
  /** Plans this component instance has loaded, by hash, with their JSON bytes for the store. */
  private readonly plans = new Map<string, Uint8Array>();
  /** The plans of the runs the current `activate` or `activateBatch` starts, by run id. */
  private newRunPlans: Map<string, Uint8Array> | undefined;
  /** Hashes of plans that name a script node (checked once per plan text). */
  private readonly scriptPlans = new Map<string, boolean>();
  /** The `digest` import: the host's SHA-256, or the portable one (set before the first instantiation). */
  private sha256Hex: ((text: string) => string) | undefined;
  /** The component's memory and allocator, grown in large steps (guest-heap.ts). */
  readonly guestHeap = new GuestHeap();

  private constructor(
    private readonly loader: ComponentLoader,
    private readonly host: EngineHostImports,
  ) {}

  static async create(loader: ComponentLoader, host: EngineHostImports): Promise<EngineInstance> {
    const instance = new EngineInstance(loader, host);
    await instance.revive();
    return instance;
  }

  get dead(): boolean {
    return this.exports === undefined;
  }

  /**
   * Builds a fresh component instance (after a trap, or the first time). Concurrent callers
   * share one instantiation; a live instance is left as it is.
   */
  revive(): Promise<void> {
    if (this.exports !== undefined) return Promise.resolve();
    this.reviving ??= this.instantiate().finally(() => {
      this.reviving = undefined;
    });
    return this.reviving;
  }

  /** Resolves when the instance is live (at once, unless it is being rebuilt after a trap). */
  ready(): Promise<void> {
    return this.revive();
  }

  /** Whether calls that evaluate or check scripts can run now. */
  get scriptsLoaded(): boolean {
    return this.host.scripts?.loaded ?? true;
  }

  /** Loads the script sandbox when the host loads it lazily (once; later calls share it). */
  loadScripts(): Promise<void> {
    return this.host.scripts && !this.host.scripts.loaded ? this.host.scripts.load() : Promise.resolve();
  }

  /** Calls `fn`; when it needs the script sandbox first, loads it and calls `fn` once more. */
  async withScripts<T>(fn: () => T): Promise<T> {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof CodedError && err.code === 'sandbox.not-loaded')) throw err;
      await this.loadScripts();
      return fn();
    }
  }

  private assertScriptsFor(what: string, json: string): void {
    if (!this.scriptsLoaded && needsScripts(json)) throw new SandboxNotLoadedError(what);
  }

  private async instantiate(): Promise<void> {
    if (this.instantiations > 0) this.host.log('warn', 'engine: re-instantiating the component after a trap; hot runs will be reloaded from the journal');
    this.plans.clear();
    this.sha256Hex ??= this.host.sha256Hex ?? (await portableSha256Hex());
    const root = await this.loader.instantiate((p) => this.loader.getCoreModule(p), this.imports());
    this.exports = root.engine ?? root['gm-hz:workflow/engine@1.0.0'];
    this.instantiations += 1;
  }

  private imports(): Record<string, unknown> {
    const versioned = this.versionedImports();
    // jco looks imports up by interface name without the package version.
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(versioned)) out[name.replace(/@[0-9.]+$/, '')] = value;
    return out;
  }

  private versionedImports(): Record<string, unknown> {
    const host = this.host;
    const staged = () => this.staged;
    const loadTail = (runId: string): { plan: string; checkpoint?: string; events: string; lastSeq: number } | undefined => {
      try {
        const tail = host.load(runId);
        if (!tail) return undefined;
        const planText = decoder.decode(tail.plan);
        if (host.scripts && !host.scripts.loaded && needsScripts(planText)) throw new SandboxNotLoadedError(`run ${runId}`);
        return { plan: planText, checkpoint: tail.checkpoint ? decoder.decode(tail.checkpoint) : undefined, events: decoder.decode(tail.events), lastSeq: tail.lastSeq };
      } catch (err) {
        const e = err as { code?: string; message?: string };
        throw errorWithPayload({ code: typeof e.code === 'string' ? e.code : 'store.io', message: String(e.message ?? err) });
      }
    };
    const stageCommit = (runId: string, expectedSeq: number, lastSeq: number, events: Uint8Array, checkpoint: Uint8Array | undefined, status: string) => {
      const plan = expectedSeq === 0 ? this.newRunPlans?.get(runId) : undefined;
      staged().commits.push({
        runId,
        expectedSeq,
        lastSeq,
        events,
        ...(checkpoint !== undefined ? { checkpoint } : {}),
        ...(plan !== undefined ? { plan } : {}),
        status,
      });
    };
    return {
      'gm-hz:workflow/journal@1.0.0': {
        load: withRawLowering(
          loadTail,
          // load(run-id) -> result<option<run-tail>, store-error>, written at `retPtr`: the result's
          // case at +0; ok: the option's case at +4, then plan +8, checkpoint (option) +16,
          // events +28, last-seq +36; err: code +4, message +12 (a string is its pointer and length).
          (memory, realloc) => {
            this.guestHeap.attach(memory, realloc);
            return (runIdPtr: number, runIdLen: number, retPtr: number) => {
              let tail: ReturnType<typeof loadTail>;
              try {
                tail = loadTail(utf8Text(memory, runIdPtr, runIdLen));
              } catch (err) {
                const payload = (err as { payload?: { code: string; message: string } }).payload;
                if (!payload) throw err;
                const code = lowerString(memory, realloc, payload.code);
                const message = lowerString(memory, realloc, payload.message);
                const view = new DataView(memory.buffer);
                view.setUint8(retPtr, 1);
                view.setUint32(retPtr + 4, code[0], true);
                view.setUint32(retPtr + 8, code[1], true);
                view.setUint32(retPtr + 12, message[0], true);
                view.setUint32(retPtr + 16, message[1], true);
                return;
              }
              if (tail === undefined) {
                const view = new DataView(memory.buffer);
                view.setUint8(retPtr, 0);
                view.setUint8(retPtr + 4, 0);
                return;
              }
              const plan = lowerString(memory, realloc, tail.plan);
              const checkpoint = tail.checkpoint !== undefined ? lowerString(memory, realloc, tail.checkpoint) : undefined;
              const events = lowerString(memory, realloc, tail.events);
              const view = new DataView(memory.buffer);
              view.setUint8(retPtr, 0);
              view.setUint8(retPtr + 4, 1);
              view.setUint32(retPtr + 8, plan[0], true);
              view.setUint32(retPtr + 12, plan[1], true);
              view.setUint8(retPtr + 16, checkpoint ? 1 : 0);
              if (checkpoint) {
                view.setUint32(retPtr + 20, checkpoint[0], true);
                view.setUint32(retPtr + 24, checkpoint[1], true);
              }
              view.setUint32(retPtr + 28, events[0], true);
              view.setUint32(retPtr + 32, events[1], true);
              view.setUint32(retPtr + 36, tail.lastSeq >>> 0, true);
            };
          },
        ),
        commit: withRawLowering(
          (request: { runId: string; expectedSeq: number; lastSeq: number; events: string; checkpoint?: string; status: string }) => {
            stageCommit(request.runId, request.expectedSeq, request.lastSeq, encoder.encode(request.events), request.checkpoint !== undefined ? encoder.encode(request.checkpoint) : undefined, request.status);
          },
          // commit(request: commit-request), flattened: run-id, expected-seq, last-seq, events,
          // checkpoint (option), status. The journal keeps the UTF-8 bytes the engine wrote.
          (memory) => (runIdPtr: number, runIdLen: number, expectedSeq: number, lastSeq: number, eventsPtr: number, eventsLen: number, hasCheckpoint: number, checkpointPtr: number, checkpointLen: number, statusPtr: number, statusLen: number) => {
            if (hasCheckpoint !== 0 && hasCheckpoint !== 1) throw new TypeError('invalid variant discriminant for option');
            stageCommit(
              utf8Text(memory, runIdPtr, runIdLen),
              expectedSeq >>> 0,
              lastSeq >>> 0,
              utf8Bytes(memory, eventsPtr, eventsLen),
              hasCheckpoint === 1 ? utf8Bytes(memory, checkpointPtr, checkpointLen) : undefined,
              utf8Text(memory, statusPtr, statusLen),
            );
          },
        ),
      },
      'gm-hz:workflow/gateway@1.0.0': {
        request: withRawLowering(
          (json: string) => {
            staged().requests.push(JSON.parse(json) as GatewayRequest);
          },
          (memory) => (ptr: number, len: number) => {
            staged().requests.push(JSON.parse(utf8Text(memory, ptr, len)) as GatewayRequest);
          },
        ),
        cancel: withRawLowering(
          (invocationId: string, reason: string) => {
            staged().cancels.push({ invocationId, reason });
          },
          (memory) => (idPtr: number, idLen: number, reasonPtr: number, reasonLen: number) => {
            staged().cancels.push({ invocationId: utf8Text(memory, idPtr, idLen), reason: utf8Text(memory, reasonPtr, reasonLen) });
          },
        ),
      },
      'gm-hz:workflow/sandbox@1.0.0': {
        evaluate(source: string, input: string, limits: ScriptLimits) {
          let outcome;
          try {
            outcome = host.evaluateScript(source, input, limits);
          } catch (err) {
            outcome = { ok: false as const, error: { code: 'script.host-error', message: err instanceof Error ? err.message : String(err) } };
          }
          if (outcome.ok) return { output: outcome.output, fuelUsed: outcome.fuelUsed };
          throw errorWithPayload({ code: outcome.error.code, message: outcome.error.message, line: outcome.error.line });
        },
        checkSyntax(source: string) {
          try {
            const e = host.checkScriptSyntax(source);
            return e ? { code: e.code, message: e.message, line: e.line } : undefined;
          } catch (err) {
            return { code: 'script.host-error', message: err instanceof Error ? err.message : String(err), line: undefined };
          }
        },
      },
      'gm-hz:workflow/digest@1.0.0': {
        sha256: withRawLowering(
          (text: string) => this.sha256Hex!(text),
          // sha256(text: string) -> string: the text's pointer and length, then where the
          // result's pointer (+0) and length (+4) go.
          (memory, realloc) => (ptr: number, len: number, retPtr: number) => {
            const [hexPtr, hexLen] = lowerString(memory, realloc, this.sha256Hex!(utf8Text(memory, ptr, len)));
            const view = new DataView(memory.buffer);
            view.setUint32(retPtr, hexPtr, true);
            view.setUint32(retPtr + 4, hexLen, true);
          },
        ),
      },
      'gm-hz:workflow/log@1.0.0': {
        write(level: 'debug' | 'info' | 'warn' | 'error', message: string) {
          try {
            host.log(level, message);
          } catch {
            // Logging never fails the engine.
          }
        },
      },
    };
  }

  private call<T>(name: string, fn: (e: any) => T): T {
    if (this.exports === undefined) {
      // A failed instantiation leaves nothing under way: start another one.
      this.revive().catch(() => undefined);
      throw new EngineRevivingError(`the engine is being re-instantiated after a trap; retry ${name} once ready() resolves`);
    }
    try {
      const out = fn(this.exports);
      this.guestHeap.settle();
      return out;
    } catch (err) {
      const payload = (err as { payload?: unknown }).payload;
      if (payload && typeof payload === 'object' && typeof (payload as { code?: unknown }).code === 'string') throw engineError(payload as EngineErrorPayload);
      this.exports = undefined;
      const message = err instanceof Error ? err.message : String(err);
      this.host.log('error', `engine: the component trapped in ${name}: ${message}; the instance was discarded`);
      // Rebuilt at once, so every entry point (not only the kernel's activations) finds a live
      // instance again; a failure is logged and retried by the next call.
      this.revive().catch((reviveErr) => this.host.log('error', `engine: re-instantiation failed: ${reviveErr instanceof Error ? reviveErr.message : String(reviveErr)}`));
      throw new EngineTrapError(`the engine trapped in ${name}: ${message}`);
    }
  }

  private takeStaged(): StagedWork {
    const work = this.staged;
    this.staged = { commits: [], requests: [], cancels: [] };
    return work;
  }

  /**
   * The request an activation sends, and the JSON bytes of its plan (stored with a new run's
   * first commit). A plan crosses the boundary once per instance; later runs of it name its hash.
   */
  private activationRequest(activation: ActivationInput): { request: Record<string, unknown>; planBytes?: Uint8Array } {
    const { plan, ...rest } = activation;
    if (!plan) return { request: rest };
    if (!this.scriptsLoaded) {
      let scripted = this.scriptPlans.get(plan.planHash);
      if (scripted === undefined) {
        scripted = needsScripts(JSON.stringify(plan));
        if (this.scriptPlans.size >= 256) this.scriptPlans.delete(this.scriptPlans.keys().next().value as string);
        this.scriptPlans.set(plan.planHash, scripted);
      }
      if (scripted) throw new SandboxNotLoadedError(`run ${activation.runId}`);
    }
    const bytes = this.plans.get(plan.planHash);
    if (bytes) return { request: { ...rest, planHash: plan.planHash }, planBytes: bytes };
    const planBytes = encoder.encode(JSON.stringify(plan));
    if (this.plans.size >= 256) this.plans.delete(this.plans.keys().next().value as string);
    this.plans.set(plan.planHash, planBytes);
    return { request: { ...rest, plan }, planBytes };
  }

  /**
   * Runs one activation. Returns the summary and the staged work; the caller must make
   * `commits` durable before it carries out `requests` and `cancels`.
   */
  activate(activation: ActivationInput): { summary: ActivationSummary } & StagedWork {
    this.takeStaged();
    const { plan, ...rest } = activation;
    const { request, planBytes } = this.activationRequest(activation);
    if (planBytes) this.newRunPlans = new Map([[activation.runId, planBytes]]);
    try {
      let out: string;
      try {
        const text = encodeRequest('activate', request);
        out = this.call('activate', (e) => e.activate(text));
      } catch (err) {
        // The engine evicted the plan from its cache: send it once more.
        if (!(plan && err instanceof EngineCallError && err.code === 'engine.plan-unknown')) throw err;
        this.takeStaged();
        const text = encodeRequest('activate', { ...rest, plan });
        out = this.call('activate', (e) => e.activate(text));
      }
      return { summary: JSON.parse(out) as ActivationSummary, ...this.takeStaged() };
    } catch (err) {
      if (plan) this.plans.delete(plan.planHash);
      throw err;
    } finally {
      this.newRunPlans = undefined;
      this.takeStaged();
    }
  }

  /**
   * Activates several runs (distinct run ids) in one call into the component: each outcome is
   * what `activate` would have returned or thrown for it (`SandboxNotLoadedError`, a refusal, a
   * plan the engine no longer holds), and one that failed changed nothing. Throws only when the
   * call as a whole failed (a trap: then none of them was activated, and the instance is being
   * rebuilt). The caller makes the commits of the outcomes it keeps durable before it carries out
   * their requests and cancels, as for `activate`.
   */
  activateBatch(activations: readonly ActivationInput[]): BatchOutcome[] {
    this.takeStaged();
    const outcomes: BatchOutcome[] = new Array(activations.length);
    const sent: number[] = [];
    const texts: string[] = [];
    const plans = new Map<string, Uint8Array>();
    for (let i = 0; i < activations.length; i++) {
      const a = activations[i];
      try {
        const { request, planBytes } = this.activationRequest(a);
        texts.push(encodeRequest('activate', request));
        if (planBytes) plans.set(a.runId, planBytes);
        sent.push(i);
      } catch (err) {
        if (!(err instanceof EngineCallError)) throw err;
        outcomes[i] = { ok: false, error: err };
      }
    }
    if (sent.length === 0) return outcomes;
    // A plan the engine failed to load (or dropped) is sent again by the next run of it.
    const forget = (i: number) => {
      const plan = activations[i].plan;
      if (plan) this.plans.delete(plan.planHash);
    };
    this.newRunPlans = plans;
    try {
      const out = this.call('activateBatch', (e) => e.activateBatch(texts.join('\n')));
      const staged = this.takeStaged();
      const lines = out.split('\n');
      if (lines.length !== sent.length) throw new EngineCallError('engine.bad-batch', `the engine answered ${lines.length} outcomes for a batch of ${sent.length} activations`, undefined);
      let c = 0;
      let r = 0;
      let x = 0;
      for (let k = 0; k < sent.length; k++) {
        const line = lines[k];
        const head = batchLine.exec(line);
        if (!head) throw new EngineCallError('engine.bad-batch', `the engine answered an outcome that is not "ok|err <commits> <requests> <cancels> <json>": ${line.slice(0, 80)}`, undefined);
        const counts = [Number(head[2]), Number(head[3]), Number(head[4])];
        const work: StagedWork = { commits: staged.commits.slice(c, (c += counts[0])), requests: staged.requests.slice(r, (r += counts[1])), cancels: staged.cancels.slice(x, (x += counts[2])) };
        const json = line.slice(head[0].length);
        if (head[1] === 'ok') outcomes[sent[k]] = { ok: true, summary: JSON.parse(json) as ActivationSummary, ...work };
        else {
          forget(sent[k]);
          outcomes[sent[k]] = { ok: false, error: engineError(JSON.parse(json) as EngineErrorPayload) };
        }
      }
      if (c !== staged.commits.length || r !== staged.requests.length || x !== staged.cancels.length) {
        throw new EngineCallError('engine.bad-batch', `the engine's outcomes account for ${c} commits, ${r} requests and ${x} cancels of the ${staged.commits.length}, ${staged.requests.length} and ${staged.cancels.length} it staged`, undefined);
      }
      return outcomes;
    } catch (err) {
      for (const i of sent) forget(i);
      // An answer that cannot be split: the engine went on with runs whose staged work is dropped
      // here, so it forgets them and rebuilds each from the journal on its next activation.
      if (!(err instanceof EngineTrapError) && !this.dead) {
        for (const i of sent) {
          try {
            this.evict(activations[i].runId);
          } catch {
            // A failed evict leaves the instance dead, which forgets every run.
          }
        }
      }
      throw err;
    } finally {
      this.newRunPlans = undefined;
      this.takeStaged();
    }
  }

  evict(runId: string): void {
    if (this.exports !== undefined) this.call('evict', (e) => e.evict(runId));
  }

  describe(): Record<string, unknown> {
    return JSON.parse(this.call('describe', (e) => e.describe()));
  }

  validate(template: string | Uint8Array): ValidationReport {
    const text = typeof template === 'string' ? template : decoder.decode(template);
    assertTemplateJson(text);
    this.assertScriptsFor('validating this template', text);
    return JSON.parse(this.call('validate', (e) => e.validate(text))) as ValidationReport;
  }

  compile(request: { root: { template: unknown; revision?: number }; dependencies?: { template: unknown; revision: number }[]; nodeDefinitions?: HostNodeDefinition[] }): ExecutionPlan {
    // The engine names what is wrong with the request's shape; what it cannot read is named here.
    const deps: unknown = request.dependencies;
    const templateOf = (v: unknown): unknown => (v !== null && typeof v === 'object' ? (v as { template?: unknown }).template : undefined);
    if (templateOf(request.root) !== undefined) assertTemplateJson(templateOf(request.root));
    if (Array.isArray(deps)) for (const d of deps) if (templateOf(d) !== undefined) assertTemplateJson(templateOf(d));
    const text = encodeRequest('compile', request);
    this.assertScriptsFor('compiling this template', text);
    return JSON.parse(this.call('compile', (e) => e.compile(text))) as ExecutionPlan;
  }

  /**
   * Replays a journal: `events` as objects, or `eventTexts` as the journal keeps them (one JSON
   * text per event, no newline inside), which go to the engine as they are.
   */
  replay(request: { mode: 'inspect' | 'recorded'; plan: ExecutionPlan; editedPlan?: ExecutionPlan; events?: unknown[]; eventTexts?: readonly string[]; artifacts?: Record<string, string> }): Record<string, unknown> {
    // The events go one per line after the request's JSON, as the journal keeps them: the engine
    // compares the events it replays with these texts as they are (docs/engine.md, "Replay").
    const { events, eventTexts, ...rest } = request;
    const lines = eventTexts ?? (events ?? []).map((e) => encodeRequest('replay', e));
    const text = lines.length === 0 ? encodeRequest('replay', { ...rest, events: [] }) : [encodeRequest('replay', rest), ...lines].join('\n');
    // An inspection folds events only; a recorded replay runs the scripts again.
    if (request.mode !== 'inspect') this.assertScriptsFor('replaying this run', text);
    return JSON.parse(
      this.call('replay', (e) => {
        // The guest holds the parsed journal, the events it replays and the run's state: about
        // 5 to 8 times the request's text (measured on foreach journals of 16,000-100,000 events).
        this.guestHeap.expect(text.length * replayHeapPerRequestByte);
        return e.replay(text);
      }),
    );
  }
}

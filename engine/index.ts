// Maps the WIT world `workflow-engine` onto the engine core. This is the only file that knows
// the component's import and export shapes. Every export has a top-level guard: a thrown value
// that is not the declared error payload would trap the instance.
import { commit as journalCommit, load as journalLoad } from 'gm-hz:workflow/journal@1.0.0';
import { cancel as gatewayCancel, request as gatewayRequest } from 'gm-hz:workflow/gateway@1.0.0';
import { checkSyntax as sandboxCheckSyntax, evaluate as sandboxEvaluate } from 'gm-hz:workflow/sandbox@1.0.0';
import { write as logWrite } from 'gm-hz:workflow/log@1.0.0';
import { sha256 as hostSha256 } from 'gm-hz:workflow/digest@1.0.0';
// The declarations of these modules are generated from wit/ at build time (dist/guest-types/).
import type * as EngineExports from 'gm-hz:workflow/engine@1.0.0';
import { CompileError, compilePlan, nodeDefinitionSetHash, semanticHash, type CompileRequest } from './compiler/plan.js';
import { validateTemplate } from './compiler/validate.js';
import { hostDefinitions } from './nodes/custom.js';
import { EngineCore, type CoreHost } from './core.js';
import { EngineError } from './errors.js';
import { requestTexts, type ActivationRequest, type ScriptHost } from './runtime/activation.js';
import { inspect, recorded, type ReplayRequest } from './replay/replay.js';
import { engineVersion, eventSchemaVersion, checkpointSchemaVersion, supportedFlags } from './version.js';
import { limits } from './limits.js';
import { nodeKinds } from './nodes/index.js';
import { useSha256Hex } from './hash.js';

// Every digest the engine computes is the host's SHA-256: the same value, native speed.
useSha256Hex(hostSha256);

function splitLines(text: string): string[] {
  return text.length === 0 ? [] : text.split('\n').filter((line) => line.length > 0);
}

const scripts: ScriptHost = {
  evaluate(source, inputJson, l) {
    try {
      const r = sandboxEvaluate(source, inputJson, { fuel: l.fuel, memoryBytes: l.memoryBytes, stackBytes: l.stackBytes, outputBytes: l.outputBytes });
      return { ok: true, output: r.output, fuelUsed: r.fuelUsed };
    } catch (err) {
      const e = (err as { payload?: unknown }).payload ?? err;
      const p = e as { code?: string; message?: string; line?: number };
      return { ok: false, error: { code: p.code ?? 'script.runtime', message: p.message ?? String(e), ...(p.line !== undefined ? { line: p.line } : {}) } };
    }
  },
  checkSyntax(source) {
    const e = sandboxCheckSyntax(source);
    return e ? { message: e.message, ...(e.line !== undefined ? { line: e.line } : {}) } : undefined;
  },
};

/** How many commits, requests and cancels the engine has staged: `activateBatch` tells the host whose they are. */
const staged = { commits: 0, requests: 0, cancels: 0 };

const host: CoreHost = {
  ...scripts,
  load(runId) {
    let tail;
    try {
      tail = journalLoad(runId);
    } catch (err) {
      const e = ((err as { payload?: unknown }).payload ?? err) as { code?: string; message?: string };
      throw new EngineError(e.code ?? 'store.io', `loading run ${runId}: ${e.message ?? String(e)}`);
    }
    if (!tail) return undefined;
    return {
      plan: tail.plan,
      checkpoint: tail.checkpoint || undefined,
      events: splitLines(tail.events),
      lastSeq: tail.lastSeq,
    };
  },
  commit(c) {
    staged.commits += 1;
    journalCommit({
      runId: c.runId,
      expectedSeq: c.expectedSeq,
      lastSeq: c.lastSeq,
      events: c.events.join('\n'),
      checkpoint: c.checkpoint,
      status: c.status,
    });
  },
  request(r) {
    staged.requests += 1;
    gatewayRequest(requestTexts.get(r) ?? JSON.stringify(r));
  },
  cancel(invocationId, reason) {
    staged.cancels += 1;
    gatewayCancel(invocationId, reason);
  },
};

const core = new EngineCore(host);

function toPayload(err: unknown): { code: string; message: string; detail: string } {
  if (err instanceof EngineError) {
    return { code: err.code, message: err.message, detail: err.detail === undefined ? '' : JSON.stringify(err.detail) };
  }
  if (err instanceof CompileError) {
    return { code: err.code, message: err.message, detail: JSON.stringify({ errors: err.errors }) };
  }
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  const stack = err instanceof Error && err.stack ? err.stack : '';
  try {
    logWrite('error', `engine.internal: ${message}\n${stack}`);
  } catch {
    // Logging is best effort.
  }
  return { code: 'engine.internal', message, detail: JSON.stringify({ stack }) };
}

function guarded<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    // A result-typed export must throw the payload itself, never an Error object.
    throw toPayload(err);
  }
}

function parse<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new EngineError('engine.bad-json', `${what} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** One activation: its request's JSON in, its summary's JSON out. */
function activate(activation: string): string {
  const a = parse<ActivationRequest & { plan?: any; planHash?: string; templateKey?: string }>(activation, 'activation');
  if (typeof a.runId !== 'string' || typeof a.now !== 'number' || !Array.isArray(a.facts)) {
    throw new EngineError('engine.bad-activation', 'an activation needs runId (string), now (number) and facts (array)');
  }
  const { plan, planHash, templateKey, ...request } = a;
  const summary = core.activate(request, plan || planHash ? { plan, planHash, templateKey } : undefined);
  return JSON.stringify(summary);
}

/** `{template, nodeDefinitions: [...]}` and nothing else: a template has an `apiVersion` and no such members. */
function isValidateRequest(value: unknown): value is { template: unknown; nodeDefinitions: unknown[] } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 2 && 'template' in value && Array.isArray((value as { nodeDefinitions?: unknown }).nodeDefinitions);
}

/**
 * The node types this engine runs, each with its config schema, as JSON text: written once at the
 * module's top level (so the snapshot holds it), spliced into every `describe()`.
 */
const nodeTypesText = JSON.stringify(
  [...nodeKinds.values()].map((k) => ({
    uses: k.uses,
    label: k.label,
    ...(k.role ? { role: k.role } : {}),
    ...(k.capability ? { capability: k.capability } : {}),
    ...(k.ports ? { ports: k.ports } : {}),
    configSchema: k.configSchema,
    implementationDigest: k.implementationDigest,
  })),
);

export const engine = {
  describe(): string {
    const head = JSON.stringify({
      engineVersion,
      eventSchemaVersion,
      checkpointSchemaVersion,
      flags: supportedFlags,
      nodeDefinitionSetHash: nodeDefinitionSetHash(),
      limits,
    });
    return `${head.slice(0, -1)},"nodeTypes":${nodeTypesText}}`;
  },

  /**
   * `template`: a template's JSON, or a request `{"template": ..., "nodeDefinitions": [...]}`
   * that carries the host's node definitions as `compile`'s request does.
   */
  validate(template: string): string {
    try {
      // A request's definitions are small next to the bound, which is on the text as it comes.
      if (template.length > limits.templateBytesMax) {
        return JSON.stringify({ ok: false, errors: [{ code: 'template.too-large', pointer: '', message: `the template has ${template.length} characters (at most ${limits.templateBytesMax})` }] });
      }
      let value: unknown;
      try {
        value = JSON.parse(template);
      } catch (err) {
        return JSON.stringify({ ok: false, errors: [{ code: 'template.bad-json', pointer: '', message: `not valid JSON: ${err instanceof Error ? err.message : String(err)}` }] });
      }
      let host = hostDefinitions(undefined);
      if (isValidateRequest(value)) {
        host = hostDefinitions(value.nodeDefinitions);
        if (host.errors.length > 0) return JSON.stringify({ ok: false, errors: host.errors });
        value = value.template;
      }
      const errors = validateTemplate(value, scripts.checkSyntax, host.kinds);
      const report: Record<string, unknown> = { ok: errors.length === 0, errors };
      if (errors.length === 0) report.semanticHash = semanticHash(value);
      return JSON.stringify(report);
    } catch (err) {
      const p = toPayload(err);
      return JSON.stringify({ ok: false, errors: [{ code: p.code, pointer: '', message: p.message }] });
    }
  },

  compile(request: string): string {
    return guarded(() => JSON.stringify(compilePlan(parse<CompileRequest>(request, 'compile request'), scripts.checkSyntax)));
  },

  activate(activation: string): string {
    return guarded(() => activate(activation));
  },

  activateBatch(activations: string): string {
    const lines: string[] = [];
    for (const activation of activations.length === 0 ? [] : activations.split('\n')) {
      const before = [staged.commits, staged.requests, staged.cancels];
      let result: string;
      let ok = true;
      try {
        result = activate(activation);
      } catch (err) {
        ok = false;
        result = JSON.stringify(toPayload(err));
      }
      lines.push(`${ok ? 'ok' : 'err'} ${staged.commits - before[0]} ${staged.requests - before[1]} ${staged.cancels - before[2]} ${result}`);
    }
    return lines.join('\n');
  },

  evict(runId: string): void {
    try {
      core.evict(runId);
    } catch {
      // Evicting cannot fail in a way the host could act on.
    }
  },

  replay(request: string): string {
    return guarded(() => {
      // The request's JSON, then (from the first newline on) the journal's events one per line,
      // as the journal keeps them: a recorded replay compares the events it produces with these
      // texts instead of serialising each recorded event again. A request without a newline
      // carries its events in its JSON.
      const lines = request.indexOf('\n');
      const r = parse<ReplayRequest>(lines < 0 ? request : request.slice(0, lines), 'replay request');
      if (lines >= 0) r.eventTexts = request.split('\n').slice(1);
      const report = r.mode === 'inspect' ? inspect(r) : r.mode === 'recorded' ? recorded(r, scripts) : undefined;
      if (report === undefined) throw new EngineError('replay.bad-mode', `replay mode must be inspect or recorded, got ${JSON.stringify(r.mode)}`);
      return JSON.stringify(report);
    });
  },
} satisfies typeof EngineExports;

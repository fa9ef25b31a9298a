// Maps the WIT world `workflow-engine` onto the engine core. This is the only file that knows
// the component's import and export shapes. Every export has a top-level guard: a thrown value
// that is not the declared error payload would trap the instance.
import { commit as journalCommit, load as journalLoad } from 'gm-hz:workflow/journal@1.0.0';
import { cancel as gatewayCancel, request as gatewayRequest } from 'gm-hz:workflow/gateway@1.0.0';
import { checkSyntax as sandboxCheckSyntax, evaluate as sandboxEvaluate } from 'gm-hz:workflow/sandbox@1.0.0';
import { write as logWrite } from 'gm-hz:workflow/log@1.0.0';
import { CompileError, compilePlan, nodeDefinitionSetHash, semanticHash, type CompileRequest } from './compiler/plan.js';
import { validateTemplate } from './compiler/validate.js';
import { EngineCore, type CoreHost } from './core.js';
import { EngineError } from './errors.js';
import type { ActivationRequest, ScriptHost } from './runtime/activation.js';
import { inspect, recorded, type ReplayRequest } from './replay/replay.js';
import { splitLines, utf8Decode, utf8Encode } from './utf8.js';
import { engineVersion, eventSchemaVersion, checkpointSchemaVersion, supportedFlags } from './version.js';
import { limits } from './limits.js';

function joinLines(lines: string[]): Uint8Array {
  return utf8Encode(lines.join('\n'));
}

const scripts: ScriptHost = {
  evaluate(source, inputJson, l) {
    try {
      const r = sandboxEvaluate(source, utf8Encode(inputJson), { fuel: l.fuel, memoryBytes: l.memoryBytes, stackBytes: l.stackBytes, outputBytes: l.outputBytes });
      return { ok: true, output: utf8Decode(r.output), fuelUsed: r.fuelUsed };
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
      plan: utf8Decode(tail.plan),
      checkpoint: tail.checkpoint ? utf8Decode(tail.checkpoint) : undefined,
      events: splitLines(tail.events),
      lastSeq: tail.lastSeq,
    };
  },
  commit(c) {
    journalCommit({
      runId: c.runId,
      expectedSeq: c.expectedSeq,
      lastSeq: c.lastSeq,
      events: joinLines(c.events),
      checkpoint: c.checkpoint === undefined ? undefined : utf8Encode(c.checkpoint),
      plan: c.plan === undefined ? undefined : utf8Encode(c.plan),
      status: c.status,
    });
  },
  request(r) {
    gatewayRequest(utf8Encode(JSON.stringify(r)));
  },
  cancel(invocationId, reason) {
    gatewayCancel(invocationId, reason);
  },
};

const core = new EngineCore(host);

function toPayload(err: unknown): { code: string; message: string; detail: Uint8Array } {
  if (err instanceof EngineError) {
    return { code: err.code, message: err.message, detail: err.detail === undefined ? new Uint8Array(0) : utf8Encode(JSON.stringify(err.detail)) };
  }
  if (err instanceof CompileError) {
    return { code: err.code, message: err.message, detail: utf8Encode(JSON.stringify({ errors: err.errors })) };
  }
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  const stack = err instanceof Error && err.stack ? err.stack : '';
  try {
    logWrite('error', `engine.internal: ${message}\n${stack}`);
  } catch {
    // Logging is best effort.
  }
  return { code: 'engine.internal', message, detail: utf8Encode(JSON.stringify({ stack })) };
}

function guarded<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    // A result-typed export must throw the payload itself, never an Error object.
    throw toPayload(err);
  }
}

function parse<T>(bytes: Uint8Array, what: string): T {
  try {
    return JSON.parse(utf8Decode(bytes)) as T;
  } catch (err) {
    throw new EngineError('engine.bad-json', `${what} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export const engine = {
  describe(): Uint8Array {
    return utf8Encode(
      JSON.stringify({
        engineVersion,
        eventSchemaVersion,
        checkpointSchemaVersion,
        flags: supportedFlags,
        nodeDefinitionSetHash: nodeDefinitionSetHash(),
        limits,
      }),
    );
  },

  validate(template: Uint8Array): Uint8Array {
    try {
      if (template.length > limits.templateBytesMax) {
        return utf8Encode(JSON.stringify({ ok: false, errors: [{ code: 'template.too-large', pointer: '', message: `the template has ${template.length} bytes (at most ${limits.templateBytesMax})` }] }));
      }
      let value: unknown;
      try {
        value = JSON.parse(utf8Decode(template));
      } catch (err) {
        return utf8Encode(JSON.stringify({ ok: false, errors: [{ code: 'template.bad-json', pointer: '', message: `not valid JSON: ${err instanceof Error ? err.message : String(err)}` }] }));
      }
      const errors = validateTemplate(value, scripts.checkSyntax);
      const report: Record<string, unknown> = { ok: errors.length === 0, errors };
      if (errors.length === 0) report.semanticHash = semanticHash(value);
      return utf8Encode(JSON.stringify(report));
    } catch (err) {
      const p = toPayload(err);
      return utf8Encode(JSON.stringify({ ok: false, errors: [{ code: p.code, pointer: '', message: p.message }] }));
    }
  },

  compile(request: Uint8Array): Uint8Array {
    return guarded(() => utf8Encode(JSON.stringify(compilePlan(parse<CompileRequest>(request, 'compile request'), scripts.checkSyntax))));
  },

  activate(activation: Uint8Array): Uint8Array {
    return guarded(() => {
      const a = parse<ActivationRequest & { plan?: any; templateKey?: string }>(activation, 'activation');
      if (typeof a.runId !== 'string' || typeof a.now !== 'number' || !Array.isArray(a.facts)) {
        throw new EngineError('engine.bad-activation', 'an activation needs runId (string), now (number) and facts (array)');
      }
      const { plan, templateKey, ...request } = a;
      const summary = core.activate(request, plan ? { plan, templateKey } : undefined);
      return utf8Encode(JSON.stringify(summary));
    });
  },

  evict(runId: string): void {
    try {
      core.evict(runId);
    } catch {
      // Evicting cannot fail in a way the host could act on.
    }
  },

  replay(request: Uint8Array): Uint8Array {
    return guarded(() => {
      const r = parse<ReplayRequest>(request, 'replay request');
      const report = r.mode === 'inspect' ? inspect(r) : r.mode === 'recorded' ? recorded(r, scripts) : undefined;
      if (report === undefined) throw new EngineError('replay.bad-mode', `replay mode must be inspect or recorded, got ${JSON.stringify(r.mode)}`);
      return utf8Encode(JSON.stringify(report));
    });
  },
};

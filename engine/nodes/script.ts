// `core.script@1`: a JavaScript body evaluated in the host's deterministic sandbox, inside the
// activation (no gateway). Also the body of foreach items.
import { clip, type Json } from '../json.js';
import { limits } from '../limits.js';
import { resolveInputs } from '../runtime/bindings.js';
import type { CallOutcome, NodeKind, SyntaxChecker, ValidationAdd } from './kind.js';

export const scriptConfig = {
  type: 'object',
  required: ['source'],
  additionalProperties: false,
  properties: {
    source: { type: 'string', minLength: 1, maxLength: 65_536 },
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: { fuel: { type: 'integer', minimum: 1, maximum: 100_000 }, memoryBytes: { type: 'integer', minimum: 1_048_576, maximum: 268_435_456 } },
    },
  },
};

/** Reports a syntax error of a script's source at `pointer`. */
export function checkScriptSyntax(source: unknown, pointer: string, add: ValidationAdd, checkSyntax: SyntaxChecker): void {
  if (typeof source !== 'string') return;
  const problem = checkSyntax(source);
  if (problem) add('script.syntax', pointer, problem.line ? `line ${problem.line}: ${problem.message}` : problem.message);
}

export const script: NodeKind = {
  uses: 'core.script@1',
  label: 'script',
  configSchema: scriptConfig,
  implementationDigest: 'builtin:core.script@1:1',
  validate(node, { at, config, add, checkSyntax }) {
    checkScriptSyntax(config.source, `${at}/config/source`, add, checkSyntax);
  },
  evaluate(a, config, input): CallOutcome {
    const limitsOfNode = config.limits ?? {};
    const outcome = a.scripts.evaluate(config.source, JSON.stringify(input), {
      fuel: Math.min(limitsOfNode.fuel ?? limits.scriptFuelDefault, limits.scriptFuelMax),
      memoryBytes: Math.min(limitsOfNode.memoryBytes ?? limits.scriptMemoryBytesDefault, limits.scriptMemoryBytesMax),
      stackBytes: limits.scriptStackBytesDefault,
      outputBytes: limits.scriptOutputBytesDefault,
    });
    if (!outcome.ok) {
      const e = outcome.error;
      return { ok: false, error: { code: e.code, message: clip(e.line ? `line ${e.line}: ${e.message}` : e.message), retryable: false } };
    }
    try {
      return { ok: true, output: JSON.parse(outcome.output) as Json };
    } catch {
      return { ok: false, error: { code: 'script.not-json', message: 'the script returned text that is not JSON', retryable: false } };
    }
  },
  start(a, spec, attempt) {
    a.emit('node.started', {}, { id: spec.id, attempt });
    const outcome = script.evaluate!(a, (spec.config ?? {}) as Record<string, any>, resolveInputs(spec.inputs, a.run));
    if (outcome.ok) a.settle.commitOutput(a, spec.id, outcome.output);
    else a.settle.failNode(a, spec.id, outcome.error);
  },
};

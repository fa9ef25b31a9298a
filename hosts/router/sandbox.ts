// The router host's answer to the `sandbox` import: the same QuickJS evaluator as every host, in
// process, so a recorded replay anywhere computes what this router computed.
import { ScriptEvaluator } from '../../sandbox/index.js';
import type { EngineHostImports } from '../core/engine-instance.js';

export type ScriptImports = Pick<EngineHostImports, 'evaluateScript' | 'checkScriptSyntax'>;

export async function createScriptImports(): Promise<ScriptImports & { evaluator: ScriptEvaluator }> {
  const evaluator = await ScriptEvaluator.create();
  return {
    evaluator,
    evaluateScript: (source, inputJson, limits) => evaluator.evaluate(source, inputJson, limits),
    checkScriptSyntax: (source) => evaluator.checkSyntax(source),
  };
}

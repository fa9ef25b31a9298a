// The `sandbox` import in a Node process (the Node host and the router host): the QuickJS
// evaluator, in process, so a recorded replay anywhere computes what either host computed.
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

/** Public API of the script sandbox (package subpath `./sandbox`). */
export {
  ScriptEvaluator,
  defaultScriptLimits,
  resolveScriptLimits,
  type ScriptLimits,
  type ScriptOutcome,
  type ScriptEvaluatorOptions,
  type VariantLoader,
  type ScriptEvaluatorDiagnostics,
  type VariantOptions,
} from './evaluator.js';
export { scriptErrorCodes, type ScriptError, type ScriptErrorCode } from './errors.js';
export * as sandboxLimits from './limits.js';

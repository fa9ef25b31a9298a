// The Node host's answer to the `sandbox` import: the QuickJS evaluator every Node process shares.
export { createScriptImports, type ScriptImports } from '../../shared/sandbox.js';

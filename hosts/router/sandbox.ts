// The router host's answer to the `sandbox` import: the same in-process QuickJS evaluator as the
// Node host (it loads nothing but the sandbox), so a recorded replay anywhere computes what this
// router computed.
export { createScriptImports, type ScriptImports } from '../shared/sandbox.js';

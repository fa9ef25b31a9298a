// The `sandbox` import in a Node process (the Node host and the router host): the QuickJS
// evaluator, in process, so a recorded replay anywhere computes what either host computed.
import type { ScriptEvaluator } from '../../sandbox/index.js';
import type { EngineHostImports } from '../core/engine-instance.js';
import { CodedError } from '../../engine/protocol/coded-error.js';
import { withLoopAlive } from './loop-alive.js';

export type ScriptImports = Pick<EngineHostImports, 'evaluateScript' | 'checkScriptSyntax'>;

/** QuickJS and the evaluator load with the first sandbox a process creates (its wasm compiles with the loop held, see loop-alive.ts). */
async function createEvaluator(): Promise<ScriptEvaluator> {
  return withLoopAlive(async () => {
    const { ScriptEvaluator } = await import('../../sandbox/index.js');
    return ScriptEvaluator.create();
  });
}

export async function createScriptImports(): Promise<ScriptImports & { evaluator: ScriptEvaluator }> {
  const evaluator = await createEvaluator();
  return {
    evaluator,
    evaluateScript: (source, inputJson, limits) => evaluator.evaluate(source, inputJson, limits),
    checkScriptSyntax: (source) => evaluator.checkSyntax(source),
  };
}

/**
 * The script imports of a host that loads QuickJS on first need: a process whose runs have no
 * script node never pays for it (about 25 MB of memory and a tenth of a second at start). The
 * engine instance asks for `load()` before any call that evaluates or checks a script
 * (`EngineInstance.withScripts`); a call that reaches the imports unloaded is a host bug and
 * fails loudly rather than as a script's verdict.
 */
export class LazyScriptImports implements ScriptImports {
  private evaluator: ScriptEvaluator | undefined;
  private loading: Promise<void> | undefined;
  private disposed = false;

  get loaded(): boolean {
    return this.evaluator !== undefined;
  }

  load(): Promise<void> {
    if (this.disposed) return Promise.reject(new CodedError('host.closed', 'the script sandbox was disposed'));
    this.loading ??= createEvaluator().then(
      (evaluator) => {
        if (this.disposed) evaluator.dispose();
        else this.evaluator = evaluator;
      },
      (err) => {
        this.loading = undefined;
        throw err;
      },
    );
    return this.loading;
  }

  evaluateScript: ScriptImports['evaluateScript'] = (source, inputJson, limits) => this.loadedEvaluator().evaluate(source, inputJson, limits);

  checkScriptSyntax: ScriptImports['checkScriptSyntax'] = (source) => this.loadedEvaluator().checkSyntax(source);

  dispose(): void {
    this.disposed = true;
    this.evaluator?.dispose();
    this.evaluator = undefined;
  }

  private loadedEvaluator(): ScriptEvaluator {
    if (!this.evaluator) throw new CodedError('sandbox.not-loaded', 'a script reached the sandbox before it was loaded');
    return this.evaluator;
  }
}

// Self-contained journal exports: the events of a run, its pinned plan and the artifacts it
// captured. An export can be inspected and replayed on another machine with no store and no
// gateway (`agent-workflow replay --from <file>`, the browser replay page).
import { EngineInstance } from '../../core/engine-instance.js';
import { artifactTexts, type RunExport } from '../../core/export-format.js';
import type { ExecutionPlan } from '../../core/types.js';
import { nodeComponentLoader } from './component.js';
import { stderrLog } from '../observe/log.js';
import { createScriptImports } from './sandbox.js';
import { sha256Hex } from '../../shared/digest.js';

export { exportFormat, ExportError, parseExport, type RunExport } from '../../core/export-format.js';

/** Replays an export with a fresh engine instance; no store, no gateway. */
export async function replayExport(exported: RunExport, options: { mode: 'inspect' | 'recorded'; editedPlan?: ExecutionPlan }): Promise<Record<string, unknown>> {
  const scripts = await createScriptImports();
  try {
    const engine = await EngineInstance.create(nodeComponentLoader(), { load: () => undefined, ...scripts, sha256Hex, log: stderrLog() });
    return engine.replay({ mode: options.mode, plan: exported.plan, ...(options.editedPlan ? { editedPlan: options.editedPlan } : {}), events: exported.events, artifacts: artifactTexts(exported) });
  } finally {
    scripts.evaluator.dispose();
  }
}

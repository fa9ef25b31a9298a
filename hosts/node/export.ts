// Self-contained journal exports: the events of a run, its pinned plan and the artifacts it
// captured. An export can be inspected and replayed on another machine with no store and no
// gateway (`agent-workflow replay --from <file>`, the browser replay page).
import { EngineInstance } from '../core/engine-instance.js';
import type { ExecutionPlan } from '../core/types.js';
import { nodeComponentLoader } from './component.js';
import { stderrLog } from './log.js';
import { createScriptImports } from './sandbox.js';

export const exportFormat = 'agent-workflow.export/v1';

export interface RunExport {
  format: typeof exportFormat;
  run: { runId: string; status: string; lastSeq: number };
  plan: ExecutionPlan;
  events: any[];
  artifacts: Record<string, { mediaType: string; base64: string }>;
}

export class ExportError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ExportError';
  }
}

/** Checks the shape of an export read from a file; never trusts it. */
export function parseExport(value: unknown): RunExport {
  const v = value as Partial<RunExport>;
  if (!v || typeof v !== 'object' || v.format !== exportFormat) throw new ExportError('export.bad-format', `not a run export (format must be ${exportFormat})`);
  if (!v.plan || typeof v.plan !== 'object' || typeof v.plan.planHash !== 'string') throw new ExportError('export.bad-format', 'the export has no plan');
  if (!Array.isArray(v.events) || v.events.length === 0) throw new ExportError('export.bad-format', 'the export has no events');
  v.events.forEach((e, i) => {
    if (!e || typeof e !== 'object' || e.seq !== i + 1) throw new ExportError('export.bad-format', `event ${i + 1} is missing or out of order`);
  });
  return v as RunExport;
}

/** Replays an export with a fresh engine instance; no store, no gateway. */
export async function replayExport(exported: RunExport, options: { mode: 'inspect' | 'recorded'; editedPlan?: ExecutionPlan }): Promise<Record<string, unknown>> {
  const scripts = await createScriptImports();
  try {
    const engine = await EngineInstance.create(nodeComponentLoader(), { load: () => undefined, ...scripts, log: stderrLog() });
    const artifacts: Record<string, string> = {};
    for (const [digest, a] of Object.entries(exported.artifacts ?? {})) artifacts[digest] = Buffer.from(a.base64, 'base64').toString('utf8');
    return engine.replay({ mode: options.mode, plan: exported.plan, ...(options.editedPlan ? { editedPlan: options.editedPlan } : {}), events: exported.events, artifacts });
  } finally {
    scripts.evaluator.dispose();
  }
}

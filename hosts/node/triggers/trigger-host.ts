// What the trigger add-on reads and calls, and nothing else: the trigger tables, the active
// bindings, the catalog's plans, launch planning and the workers to wake, the clock, and (for
// DingTalk's `status` / `approve` / `reject`) a run's view and the approve verb. A
// `WorkflowRuntime` is one; `serve` and the SDK pass theirs, and no trigger module imports the
// runtime.
import type { RunView } from '../../core/host-runtime.js';
import type { JournalStore } from '../../core/store.js';
import type { LaunchTarget } from '../../core/host-runtime.js';
import type { WorkflowCatalog } from '../catalog/catalog.js';
import type { PreparedLaunch } from '../sdk/launch.js';
import type { CommandOutcome, LaunchOptions } from '../sdk/runtime-types.js';
import type { TriggerStorage } from '../stores/trigger-storage.js';
import type { BindingCatalog } from './bindings.js';

export interface TriggerHost {
  readonly kernel: { now(): number };
  readonly triggerStorage: TriggerStorage;
  readonly bindings: Pick<BindingCatalog, 'active' | 'activeOf'>;
  readonly catalog: Pick<WorkflowCatalog, 'plan'>;
  prepareLaunch(target: LaunchTarget | Record<string, unknown>, options?: LaunchOptions): Promise<PreparedLaunch>;
  /** Something was queued by the pipeline's own commit. */
  wakeWorkers(): void;
  getRun(runId: string): Promise<RunView>;
  readonly store: Pick<JournalStore, 'getRun'>;
  approve(runId: string, nodeId: string, options: { by: string; comment?: string; approved?: boolean; timeoutMs?: number }): Promise<CommandOutcome>;
}

/** `@gm-hz/agent-dag-workflow/router`: the router host (one cadence, file journal, local tools). */
export { RouterHost, RouterError, type RouterHostOptions, type RouterRunHandle, type RouterStats, type RecoveryReport, type RouterTool, type LaunchTarget, type AuthorityResolver, type RunSummary } from './runtime.js';
export { ControlServer, ControlError } from './control-server.js';
export { RouterOperator } from './operator.js';
export { controlSocketName, controlOps, type ControlOp, type ControlRequest, type ControlFrame } from './control-protocol.js';
export { CrashLedger, parkAfterCrashes, type CrashRecord } from './crash-ledger.js';
export type { CredentialResolver } from './gateway.js';
export { RouterGateway, outcomeOfCompletion, type ApprovalHandler, type InProcessTool, type InProcessAgent, type InProcessToolContext } from './gateway.js';
export { profiles, profileNamed, scriptsOverBudget, type RouterProfile, type PhaseBudget } from './profiles.js';
export { inflightCalls, planRunRecovery, type RunRecoveryPlan } from './recovery.js';
export { LatencyRing, type LatencySummary } from './journal.js';
export { routerComponentLoader } from './component.js';
export { stderrLog } from './log.js';
export { FileJournalStore, journalFileName, type FileJournalOptions, type OpenReport } from './file-journal.js';
export type { CompactionReport } from './compaction.js';
export { ArtifactStore, type Artifact, type ArtifactRef } from './artifacts.js';
export {
  ReceiptLog,
  type AttemptReceipts,
  type ClaimReceipt,
  type CompletionReceipt,
  type StartReceipt,
  type StopReceipt,
} from './receipt-log.js';
export {
  classifyAttempt,
  invocationIdEnv,
  LocalToolError,
  LocalToolLauncher,
  recoverAttempts,
  renderArgs,
  validateToolTable,
  type AttemptRecovery,
  type LocalToolAttempt,
  type LocalToolLauncherOptions,
  type LocalToolSpec,
  type LocalToolTable,
} from './local-tools.js';
export { identifyProcess, observeProcess, readBootId, type ProcessIdentity, type ProcessObservation } from '../shared/process-identity.js';

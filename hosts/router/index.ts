/** The router host's storage and local tools (the cadence loop comes with the shared runtime). */
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
export { identifyProcess, observeProcess, readBootId, type ProcessIdentity, type ProcessObservation } from './process-identity.js';

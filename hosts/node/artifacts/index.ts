// The artifacts of a runtime's store as an add-on (`runtime.artifacts`): retention by the
// deployment's TTL (retention.ts) and key rotation of sealed ones (rotate.ts). docs/durability.md,
// "Artifact retention" and "Artifact encryption".
import { WorkflowError } from '../sdk/errors.js';
import type { NodeJournalStore } from '../stores/bundle.js';
import type { ArtifactCodec } from './codec.js';
import { collectArtifacts, type CollectReport } from './retention.js';
import { rotateArtifacts, type RotationReport } from './rotate.js';

export type { CollectReport, RotationReport };

export interface RuntimeArtifacts {
  /** The deployment's TTL in days (`capture.retentionDays`), if it has one. */
  readonly retentionDays: number | undefined;
  /**
   * Deletes the captured artifacts last stored more than `retentionDays` ago (default: the
   * runtime's) that no unfinished run names; `dryRun` only counts them. Journals are kept.
   */
  collect(options?: { retentionDays?: number; dryRun?: boolean }): Promise<CollectReport>;
  /**
   * Re-wraps every artifact sealed under an older key under the current one, and seals plain ones
   * when `capture.encryptArtifacts` is on; `dryRun` only counts. Needs artifact keys (`artifact.no-keys`).
   */
  rotateKeys(options?: { dryRun?: boolean }): Promise<RotationReport>;
}

export function runtimeArtifacts(store: NodeJournalStore, parts: { retentionDays?: number; codec?: ArtifactCodec; now: () => number }): RuntimeArtifacts {
  return {
    retentionDays: parts.retentionDays,
    collect(options = {}) {
      const retentionDays = options.retentionDays ?? parts.retentionDays;
      if (retentionDays === undefined) return Promise.reject(new WorkflowError('gc.no-retention', 'no retention time: set capture.retentionDays in the runtime options (or the host module), or give retentionDays'));
      if (typeof retentionDays !== 'number' || !Number.isFinite(retentionDays) || retentionDays <= 0) return Promise.reject(new WorkflowError('gc.no-retention', `retentionDays must be a positive number of days, not ${JSON.stringify(retentionDays)}`));
      return collectArtifacts(store, { retentionDays, dryRun: options.dryRun === true, now: parts.now() });
    },
    rotateKeys(options = {}) {
      if (!parts.codec) return Promise.reject(new WorkflowError('artifact.no-keys', 'this runtime has no artifact keys: give artifactKeys (runtime options or host module) or set ADW_ARTIFACT_KEYS'));
      return rotateArtifacts(store, parts.codec, options);
    },
  };
}

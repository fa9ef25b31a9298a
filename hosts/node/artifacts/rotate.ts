// Key rotation of sealed artifacts (`runtime.artifacts.rotateKeys`, `agent-workflow artifacts
// rotate`): every artifact sealed under an older key gets its data key re-wrapped under the
// current one (the content is not re-encrypted), and, with `capture.encryptArtifacts` on, every
// plain artifact is sealed. Each rewrite is a compare-and-set on the bytes read, so a rotation
// racing another (or a put) rewrites nothing twice and loses nothing.
import { isSealed, splitSealed } from '../../core/sealed-artifact.js';
import type { NodeJournalStore } from '../stores/bundle.js';
import type { ArtifactCodec } from './codec.js';
import { artifactLimits } from '../limits.js';

export interface RotationReport {
  dryRun: boolean;
  /** The key artifacts are (or would be) sealed under now. */
  currentKey: string;
  examined: number;
  /** Sealed under an older key: re-wrapped under the current one. */
  rewrapped: number;
  /** Plain: sealed (only with `capture.encryptArtifacts` on). */
  sealed: number;
  /** Left as they are (current key, or plain with sealing off). */
  unchanged: number;
  /** Changed by someone else between the read and the rewrite (rotate again to take them). */
  raced: number;
}

export async function rotateArtifacts(store: NodeJournalStore, codec: ArtifactCodec, options: { dryRun?: boolean } = {}): Promise<RotationReport> {
  const report: RotationReport = { dryRun: options.dryRun === true, currentKey: codec.keys.current().id, examined: 0, rewrapped: 0, sealed: 0, unchanged: 0, raced: 0 };
  let afterDigest: string | undefined;
  for (;;) {
    const page = await store.storedArtifacts({ limit: artifactLimits.rotationPageArtifacts, ...(afterDigest ? { afterDigest } : {}) });
    if (page.length === 0) break;
    afterDigest = page[page.length - 1]!.digest;
    for (const { digest, bytes } of page) {
      report.examined++;
      const wasSealed = isSealed(bytes);
      const stale = wasSealed ? splitSealed(bytes).header.kid !== report.currentKey : codec.sealing;
      if (!stale) {
        report.unchanged++;
        continue;
      }
      if (!options.dryRun) {
        const next = codec.rotate(bytes, digest)!;
        if (!(await store.replaceStoredArtifact(digest, bytes, next))) {
          report.raced++;
          continue;
        }
      }
      if (wasSealed) report.rewrapped++;
      else report.sealed++;
    }
  }
  return report;
}

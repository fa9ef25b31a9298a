// The capture option of a host (`RuntimeOptions.capture`, `RouterHostOptions.capture`): checked,
// not silently dropped. An option no host carries out is refused with a typed error.
import { HostError } from './host-error.js';

const captureKeys = new Set(['mode', 'maxArtifactBytes', 'inlineBytesMax']);
const captureModes = new Set(['metadata', 'standard', 'replayable']);

/**
 * A host's `capture` option: `retentionDays`, `encryptArtifacts` (and any other key) are not
 * implemented, so they are refused (`policy.unsupported`) instead of being ignored.
 */
export function assertCaptureOptions(capture: unknown): void {
  if (capture === undefined) return;
  if (capture === null || typeof capture !== 'object' || Array.isArray(capture)) throw new HostError('policy.unsupported', 'capture must be an object { mode, maxArtifactBytes, inlineBytesMax }');
  const unknown = Object.keys(capture).filter((k) => !captureKeys.has(k));
  if (unknown.length > 0) {
    throw new HostError('policy.unsupported', `capture.${unknown.join(', capture.')} ${unknown.length > 1 ? 'are' : 'is'} not supported by this host (supported: mode, maxArtifactBytes, inlineBytesMax); nothing would enforce it`, { unsupported: unknown });
  }
  const mode = (capture as { mode?: unknown }).mode;
  if (mode !== undefined && !captureModes.has(mode as string)) throw new HostError('policy.unsupported', `capture.mode must be metadata, standard or replayable, not ${JSON.stringify(mode)}`);
}

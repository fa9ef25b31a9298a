// The capture option of a host (`RuntimeOptions.capture`, `RouterHostOptions.capture`): checked,
// not silently dropped. An option no host carries out is refused with a typed error.
import { HostError } from './host-error.js';

const captureKeys = new Set(['mode', 'maxArtifactBytes', 'inlineBytesMax']);
const captureModes = new Set(['metadata', 'standard', 'replayable']);

/**
 * A host's `capture` option. A key the host does not carry out (`retentionDays` or
 * `encryptArtifacts` on a host that has no retention or encryption, any unknown key) is refused
 * (`policy.unsupported`) instead of being ignored; `hostKeys` names what this host does carry out.
 */
export function assertCaptureOptions(capture: unknown, hostKeys: readonly ('retentionDays' | 'encryptArtifacts')[] = []): void {
  if (capture === undefined) return;
  if (capture === null || typeof capture !== 'object' || Array.isArray(capture)) throw new HostError('policy.unsupported', 'capture must be an object { mode, maxArtifactBytes, inlineBytesMax }');
  const supported = [...captureKeys, ...hostKeys];
  const unknown = Object.keys(capture).filter((k) => !supported.includes(k));
  if (unknown.length > 0) {
    throw new HostError('policy.unsupported', `capture.${unknown.join(', capture.')} ${unknown.length > 1 ? 'are' : 'is'} not supported by this host (supported: ${supported.join(', ')}); nothing would enforce it`, { unsupported: unknown });
  }
  const days = (capture as { retentionDays?: unknown }).retentionDays;
  if (days !== undefined && (typeof days !== 'number' || !Number.isFinite(days) || days <= 0)) throw new HostError('policy.unsupported', `capture.retentionDays must be a positive number of days, not ${JSON.stringify(days)}`);
  const mode = (capture as { mode?: unknown }).mode;
  if (mode !== undefined && !captureModes.has(mode as string)) throw new HostError('policy.unsupported', `capture.mode must be metadata, standard or replayable, not ${JSON.stringify(mode)}`);
}

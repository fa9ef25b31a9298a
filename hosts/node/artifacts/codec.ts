// At-rest encryption of captured artifacts (`capture.encryptArtifacts`): each artifact sealed
// under a random data key, the data key wrapped under the host's current key (envelope
// encryption; format in hosts/core/sealed-artifact.ts). Keys come from a host key provider —
// `artifactKeys` in the runtime options or the host module, else `ADW_ARTIFACT_KEYS` — and
// rotation re-wraps data keys under the new current key (`agent-workflow artifacts rotate`).
// docs/durability.md, "Artifact encryption".
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { isSealed, joinSealed, SealedArtifactError, splitSealed, type SealedHeader } from '../../core/sealed-artifact.js';
import { StoreError } from '../../core/store.js';
import { sha256Digest } from '../../shared/digest.js';
import { WorkflowError } from '../sdk/errors.js';

/** Where the host's artifact keys come from: 32-byte AES-256 keys by id. */
export interface ArtifactKeyProvider {
  /** The key new artifacts are sealed with (and rotation re-wraps to). */
  current(): { id: string; key: Uint8Array };
  /** A key by id, so artifacts sealed before a rotation still open. */
  get(id: string): Uint8Array | undefined;
}

const keyIdPattern = /^[A-Za-z0-9._-]{1,64}$/;

function keyBytes(id: string, key: Uint8Array | string): Uint8Array {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'base64') : key;
  if (bytes.byteLength !== 32 || (typeof key === 'string' && Buffer.from(bytes).toString('base64') !== key.replace(/\s+/g, ''))) {
    throw new WorkflowError('artifact.bad-key', `artifact key ${JSON.stringify(id)} must be 32 bytes (base64 of 32 bytes); got ${bytes.byteLength}`);
  }
  return bytes;
}

/** A key provider over fixed keys: `current` names the one new artifacts are sealed with. */
export function artifactKeys(spec: { current: string; keys: Record<string, Uint8Array | string> }): ArtifactKeyProvider {
  const keys = new Map<string, Uint8Array>();
  for (const [id, key] of Object.entries(spec.keys)) {
    if (!keyIdPattern.test(id)) throw new WorkflowError('artifact.bad-key', `artifact key id ${JSON.stringify(id)} must match ${keyIdPattern.source}`);
    keys.set(id, keyBytes(id, key));
  }
  const current = keys.get(spec.current);
  if (!current) throw new WorkflowError('artifact.bad-key', `the current artifact key ${JSON.stringify(spec.current)} is not among the keys (${[...keys.keys()].join(', ')})`);
  return { current: () => ({ id: spec.current, key: current }), get: (id) => keys.get(id) };
}

export const artifactKeysEnvVar = 'ADW_ARTIFACT_KEYS';

/** `ADW_ARTIFACT_KEYS=k2:<base64>,k1:<base64>`: the first is current; `undefined` when unset. */
export function artifactKeysFromEnv(env: NodeJS.ProcessEnv = process.env): ArtifactKeyProvider | undefined {
  const text = env[artifactKeysEnvVar];
  if (text === undefined || text.trim() === '') return undefined;
  const entries = text.split(',').map((part) => {
    const at = part.indexOf(':');
    if (at <= 0) throw new WorkflowError('artifact.bad-key', `${artifactKeysEnvVar} must be a comma-separated list of <id>:<base64 of 32 bytes>`);
    return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
  });
  return artifactKeys({ current: entries[0]![0], keys: Object.fromEntries(entries) });
}

function gcm(key: Uint8Array, iv: Uint8Array, aad: string, plain: Uint8Array): Uint8Array {
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  return Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

function ungcm(key: Uint8Array, iv: Uint8Array, aad: string, sealed: Uint8Array): Uint8Array {
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(sealed.subarray(sealed.length - 16));
  return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - 16)), decipher.final()]);
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

/** Seals and opens artifacts with a host key provider. */
export class ArtifactCodec {
  constructor(
    readonly keys: ArtifactKeyProvider,
    /** Whether new artifacts are sealed (`capture.encryptArtifacts`); opening works either way. */
    readonly sealing: boolean,
  ) {}

  /** The envelope of `plain` (whose digest is `digest`) under the current key. */
  seal(plain: Uint8Array, digest: string): Uint8Array {
    const { id, key } = this.keys.current();
    const dataKey = randomBytes(32);
    const wiv = randomBytes(12);
    const iv = randomBytes(12);
    const header: SealedHeader = { alg: 'A256GCM', kid: id, wk: b64(gcm(key, wiv, id, dataKey)), wiv: b64(wiv), iv: b64(iv) };
    return joinSealed(header, gcm(dataKey, iv, digest, plain));
  }

  /** The plain bytes of a stored artifact (plain ones pass through). */
  open(stored: Uint8Array, digest: string): Uint8Array {
    if (!isSealed(stored)) return stored;
    const { header, content } = splitSealed(stored);
    const key = this.keys.get(header.kid);
    if (!key) throw new SealedArtifactError('artifact.key-missing', `artifact ${digest} is sealed under key ${JSON.stringify(header.kid)}, which this host's key provider does not have`);
    try {
      const dataKey = ungcm(key, Buffer.from(header.wiv, 'base64'), header.kid, Buffer.from(header.wk, 'base64'));
      return ungcm(dataKey, Buffer.from(header.iv, 'base64'), digest, content);
    } catch {
      throw new SealedArtifactError('artifact.open-failed', `artifact ${digest} does not open with key ${JSON.stringify(header.kid)} (a wrong key, or damaged bytes)`);
    }
  }

  /**
   * What rotation writes for a stored artifact: a sealed one under an older key re-wrapped under
   * the current key (its content untouched), a plain one sealed when sealing is on; `undefined`
   * when it is as it should be.
   */
  rotate(stored: Uint8Array, digest: string): Uint8Array | undefined {
    const current = this.keys.current();
    if (!isSealed(stored)) return this.sealing ? this.seal(stored, digest) : undefined;
    const { header, content } = splitSealed(stored);
    if (header.kid === current.id) return undefined;
    const old = this.keys.get(header.kid);
    if (!old) throw new SealedArtifactError('artifact.key-missing', `artifact ${digest} is sealed under key ${JSON.stringify(header.kid)}, which this host's key provider does not have`);
    const dataKey = ungcm(old, Buffer.from(header.wiv, 'base64'), header.kid, Buffer.from(header.wk, 'base64'));
    const wiv = randomBytes(12);
    return joinSealed({ ...header, kid: current.id, wk: b64(gcm(current.key, wiv, current.id, dataKey)), wiv: b64(wiv) }, content);
  }
}

/** Opens stored bytes without a codec: plain ones pass, sealed ones need a key provider. */
export function openWithout(stored: Uint8Array, digest: string): Uint8Array {
  if (!isSealed(stored)) return stored;
  throw new SealedArtifactError('artifact.key-missing', `artifact ${digest} is sealed and this host has no artifact keys (artifactKeys, or ${artifactKeysEnvVar})`);
}

/**
 * A stored artifact as a store hands it out: its plain bytes (opened when sealed, then checked
 * against the digest) and, when sealed, the envelope as kept (exports carry that).
 */
export function openedArtifact(codec: ArtifactCodec | undefined, digest: string, size: number, mediaType: string, stored: Uint8Array): { digest: string; size: number; mediaType: string; bytes: Uint8Array; sealed?: Uint8Array } {
  const bytes = codec ? codec.open(stored, digest) : openWithout(stored, digest);
  if (sha256Digest(bytes) !== digest) throw new StoreError('store.corrupt', `artifact ${digest} does not match its digest`);
  return { digest, size, mediaType, bytes, ...(bytes !== stored ? { sealed: stored } : {}) };
}

// The envelope of an encrypted artifact, and opening it with WebCrypto (the browser page, and any
// host without node:crypto). The Node host seals and opens with node:crypto
// (hosts/node/artifacts/codec.ts); both read and write exactly this format:
//
//   bytes 0..5    "\0ADWE1"                 (no JSON text starts with NUL: a plain artifact never looks sealed)
//   bytes 6..9    header length, big-endian
//   header        JSON { alg: "A256GCM", kid, wk, wiv, iv }   (base64 fields)
//   rest          AES-256-GCM ciphertext of the artifact, then its 16-byte tag
//
// `wk` is the artifact's own random data key, wrapped (AES-256-GCM, IV `wiv`, additional data
// the key id) under the host's key `kid`; the content is encrypted under the data key with IV `iv`
// and the artifact's digest (`sha256:` of the plain bytes) as additional data, so an envelope
// moved under another digest does not open. Rotation re-wraps `wk` under a new key; the content
// is never re-encrypted.
import { CodedError } from '../../engine/protocol/coded-error.js';

export const sealedMagic = new Uint8Array([0x00, 0x41, 0x44, 0x57, 0x45, 0x31]);

export interface SealedHeader {
  alg: 'A256GCM';
  /** The id of the host key the data key is wrapped under. */
  kid: string;
  /** The data key, wrapped (ciphertext and tag), base64. */
  wk: string;
  /** The IV of the wrap, base64. */
  wiv: string;
  /** The IV of the content, base64. */
  iv: string;
}

export class SealedArtifactError extends CodedError {
  constructor(code: 'artifact.key-missing' | 'artifact.sealed-invalid' | 'artifact.open-failed', message: string) {
    super(code, message);
    this.name = 'SealedArtifactError';
  }
}

/** Whether bytes are a sealed envelope. */
export function isSealed(bytes: Uint8Array): boolean {
  if (bytes.length < sealedMagic.length + 4) return false;
  for (let i = 0; i < sealedMagic.length; i++) if (bytes[i] !== sealedMagic[i]) return false;
  return true;
}

/** The header and the encrypted content of an envelope. */
export function splitSealed(bytes: Uint8Array): { header: SealedHeader; content: Uint8Array } {
  if (!isSealed(bytes)) throw new SealedArtifactError('artifact.sealed-invalid', 'not a sealed artifact');
  const at = sealedMagic.length;
  const length = ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
  if (at + 4 + length > bytes.length) throw new SealedArtifactError('artifact.sealed-invalid', 'the sealed artifact is cut short');
  let header: SealedHeader;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(at + 4, at + 4 + length))) as SealedHeader;
  } catch {
    throw new SealedArtifactError('artifact.sealed-invalid', 'the sealed artifact has no readable header');
  }
  if (header.alg !== 'A256GCM' || typeof header.kid !== 'string' || typeof header.wk !== 'string' || typeof header.wiv !== 'string' || typeof header.iv !== 'string') {
    throw new SealedArtifactError('artifact.sealed-invalid', `unknown sealed artifact header ${JSON.stringify(header)}`);
  }
  return { header, content: bytes.subarray(at + 4 + length) };
}

/** Writes an envelope from its header and encrypted content. */
export function joinSealed(header: SealedHeader, content: Uint8Array): Uint8Array {
  const text = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(sealedMagic.length + 4 + text.length + content.length);
  out.set(sealedMagic, 0);
  const at = sealedMagic.length;
  out[at] = (text.length >>> 24) & 0xff;
  out[at + 1] = (text.length >>> 16) & 0xff;
  out[at + 2] = (text.length >>> 8) & 0xff;
  out[at + 3] = text.length & 0xff;
  out.set(text, at + 4);
  out.set(content, at + 4 + text.length);
  return out;
}

export function base64Bytes(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Opens an envelope with WebCrypto: `keys` by id (32 bytes each); the plain bytes of `digest`. */
export async function openSealedWebCrypto(bytes: Uint8Array, digest: string, keys: (kid: string) => Uint8Array | undefined): Promise<Uint8Array> {
  const { header, content } = splitSealed(bytes);
  const kek = keys(header.kid);
  if (!kek) throw new SealedArtifactError('artifact.key-missing', `artifact ${digest} is sealed under key ${JSON.stringify(header.kid)}, which was not given`);
  const subtle = globalThis.crypto.subtle;
  try {
    const wrapKey = await subtle.importKey('raw', kek as BufferSource, 'AES-GCM', false, ['decrypt']);
    const dataKey = new Uint8Array(await subtle.decrypt({ name: 'AES-GCM', iv: base64Bytes(header.wiv) as BufferSource, additionalData: new TextEncoder().encode(header.kid) }, wrapKey, base64Bytes(header.wk) as BufferSource));
    const contentKey = await subtle.importKey('raw', dataKey, 'AES-GCM', false, ['decrypt']);
    return new Uint8Array(await subtle.decrypt({ name: 'AES-GCM', iv: base64Bytes(header.iv) as BufferSource, additionalData: new TextEncoder().encode(digest) }, contentKey, content as BufferSource));
  } catch {
    throw new SealedArtifactError('artifact.open-failed', `artifact ${digest} does not open with key ${JSON.stringify(header.kid)} (a wrong key, or damaged bytes)`);
  }
}

// Content digests in a Node process: `sha256:<hex>`, the form artifacts are addressed by. The
// kernel takes the function injected (`KernelOptions.sha256`), so hosts/core stays platform-neutral.
import * as crypto from 'node:crypto';

/**
 * Hex SHA-256 of bytes or of a string's UTF-8 bytes. The one-shot `crypto.hash` (Node 20.12 and
 * later) makes no Hash object: a third of `createHash`'s time for the short texts the engine's
 * `digest` import and the trace ids hash.
 */
const hexOf: (data: Uint8Array | string) => string =
  typeof crypto.hash === 'function' ? (data) => crypto.hash('sha256', data, 'hex') : (data) => crypto.createHash('sha256').update(data).digest('hex');

export function sha256Digest(bytes: Uint8Array | string): string {
  return `sha256:${hexOf(bytes)}`;
}

/** Hex SHA-256 of a string's UTF-8 bytes: the engine's `digest` import in a Node process. */
export function sha256Hex(text: string): string {
  return hexOf(text);
}

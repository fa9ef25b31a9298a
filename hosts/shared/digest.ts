// Content digests in a Node process: `sha256:<hex>`, the form artifacts are addressed by. The
// kernel takes the function injected (`KernelOptions.sha256`), so hosts/core stays platform-neutral.
import { createHash } from 'node:crypto';

export function sha256Digest(bytes: Uint8Array | string): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** Hex SHA-256 of a string's UTF-8 bytes: the engine's `digest` import in a Node process. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

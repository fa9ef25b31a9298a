/** Bearer-token handling of the evaluation service. */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as L from '../limits.js';

/** Environment variable read when no token or token file is given. */
export const tokenEnvVar = 'AGENT_WORKFLOW_SANDBOX_TOKEN';

export function readTokenFile(path: string): string {
  const buf = readFileSync(path);
  if (buf.length > L.tokenFileBytesMax) throw new Error(`token file is larger than ${L.tokenFileBytesMax} bytes`);
  const token = buf.toString('utf8').trim();
  if (token === '') throw new Error('token file is empty');
  return token;
}

/** Compares in constant time (over digests, so the lengths leak nothing either). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (!header || !header.startsWith('Bearer ')) return false;
  const given = createHash('sha256').update(header.slice(7).trim()).digest();
  const expected = createHash('sha256').update(token).digest();
  return timingSafeEqual(given, expected);
}

export function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === '::1' || host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

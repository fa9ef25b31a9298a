/**
 * Content-addressed artifacts: `artifacts/sha256-<hex>` holds the bytes, `sha256-<hex>.type` the
 * media type. The type file is written first, then the data file, each with temp + fsync +
 * rename + fsync(dir): a data file that exists is complete. Reads verify the digest.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { StoreError } from '../core/store.js';
import { artifactBytesMax, mediaTypeBytesMax } from './limits.js';
import { writeFileDurable } from './record-file.js';

export interface ArtifactRef {
  digest: string;
  size: number;
}

export interface Artifact extends ArtifactRef {
  bytes: Uint8Array;
  mediaType: string;
}

/** A digest is not a portable id (it is 71 characters long); it has its own strict pattern. */
const digestPattern = /^sha256:[0-9a-f]{64}$/;
const mediaTypePattern = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(?:\s*;[\x20-\x7e]*)?$/;

export class ArtifactStore {
  constructor(private readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
  }

  put(bytes: Uint8Array, mediaType: string): ArtifactRef {
    if (bytes.length > artifactBytesMax) {
      throw new StoreError('store.io', `artifact of ${bytes.length} bytes exceeds artifactBytesMax (${artifactBytesMax})`);
    }
    if (mediaType.length > mediaTypeBytesMax || !mediaTypePattern.test(mediaType)) {
      throw new StoreError('store.bad-id', `media type ${JSON.stringify(mediaType)} is not valid`);
    }
    const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    const file = this.fileOf(digest);
    if (!fs.existsSync(file)) {
      try {
        writeFileDurable(`${file}.type`, Buffer.from(mediaType, 'utf8'));
        writeFileDurable(file, bytes);
      } catch (error) {
        throw new StoreError('store.io', `cannot write artifact ${digest}: ${(error as Error).message}`);
      }
    }
    return { digest, size: bytes.length };
  }

  get(digest: string): Artifact | undefined {
    const file = this.fileOf(digest);
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new StoreError('store.io', `cannot read artifact ${digest}: ${(error as Error).message}`);
    }
    if (`sha256:${createHash('sha256').update(bytes).digest('hex')}` !== digest) {
      throw new StoreError('store.corrupt', `artifact ${digest} does not match its digest`);
    }
    let mediaType = 'application/octet-stream';
    try {
      mediaType = fs.readFileSync(`${file}.type`, 'utf8');
    } catch {
      // The type file is written first; without it the bytes are still the fact.
    }
    return { digest, size: bytes.length, bytes, mediaType };
  }

  private fileOf(digest: string): string {
    if (typeof digest !== 'string' || !digestPattern.test(digest)) {
      throw new StoreError('store.bad-id', `artifact digest ${JSON.stringify(digest)} is not sha256:<64 hex digits>`);
    }
    return path.join(this.dir, digest.replace(':', '-'));
  }
}

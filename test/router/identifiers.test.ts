import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../hosts/core/store.js';
import { FileJournalStore } from '../../hosts/router/file-journal.js';
import { entry, tempDir, utf8 } from './helpers.js';

const refused = [
  '',
  '.',
  '..',
  '.hidden',
  '../escape',
  'a/b',
  '/abs',
  'a\\b',
  'C:\\x',
  'a b',
  ' lead',
  'tab\t',
  'line\n',
  'nul\0byte',
  '-dash',
  '_under',
  'é',
  'x'.repeat(37),
];
const accepted = ['a', 'run-1', 'R.2', 'ns:run_3', 'x'.repeat(36)];

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof StoreError ? error.code : `not a StoreError: ${String(error)}`;
  }
  return undefined;
}

describe('portable identifiers', () => {
  it('refuses every non-portable run id with store.bad-id on every entry point', () => {
    const store = FileJournalStore.open(tempDir());
    try {
      for (const id of refused) {
        expect(code(() => store.commit([entry(id, 0, 1, { plan: 'p' })])), JSON.stringify(id)).toBe('store.bad-id');
        expect(code(() => store.load(id)), JSON.stringify(id)).toBe('store.bad-id');
        expect(code(() => store.getRun(id)), JSON.stringify(id)).toBe('store.bad-id');
        expect(code(() => store.readEvents(id, 0, 1)), JSON.stringify(id)).toBe('store.bad-id');
      }
      // A bad id anywhere in a group refuses the whole call before anything is written.
      const size = store.fileBytes;
      expect(code(() => store.commit([entry('ok', 0, 1, { plan: 'p' }), entry('../x', 0, 1, { plan: 'p' })]))).toBe('store.bad-id');
      expect(store.fileBytes).toBe(size);
      for (const id of accepted) {
        expect(store.commit([entry(id, 0, 1, { plan: 'p' })]), id).toEqual([]);
        expect(store.getRun(id)!.lastSeq).toBe(1);
      }
    } finally {
      store.close();
    }
  });

  it('refuses artifact digests that are not sha256:<64 hex>, and verifies contents', () => {
    const store = FileJournalStore.open(tempDir());
    try {
      const ref = store.putArtifact(utf8('{"answer":42}'), 'application/json');
      expect(ref).toEqual({ digest: `sha256:${createHash('sha256').update('{"answer":42}').digest('hex')}`, size: 13 });
      expect(store.putArtifact(utf8('{"answer":42}'), 'application/json')).toEqual(ref);
      const got = store.getArtifact(ref.digest)!;
      expect(Buffer.from(got.bytes).toString()).toBe('{"answer":42}');
      expect(got.mediaType).toBe('application/json');
      expect(store.getArtifact(`sha256:${'0'.repeat(64)}`)).toBeUndefined();
      for (const digest of ['', 'sha256:../../etc/passwd', `sha256:${'A'.repeat(64)}`, `md5:${'0'.repeat(32)}`, `sha256:${'0'.repeat(63)}/`]) {
        expect(code(() => store.getArtifact(digest)), digest).toBe('store.bad-id');
      }
      expect(code(() => store.putArtifact(utf8('x'), '../evil'))).toBe('store.bad-id');
      // Bytes changed on disk are refused, not returned.
      fs.writeFileSync(path.join(store.dir, 'artifacts', ref.digest.replace(':', '-')), '{"answer":43}');
      expect(code(() => store.getArtifact(ref.digest))).toBe('store.corrupt');
    } finally {
      store.close();
    }
  });
});

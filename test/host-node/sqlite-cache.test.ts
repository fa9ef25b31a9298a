// The SQLite store's page cache: 2 MiB unless told otherwise (better-sqlite3 builds SQLite with a
// 16 MiB default, which a long run fills and the process keeps), set from the runtime's
// `sqliteCacheKiB`, and refused with a typed error outside 64 KiB – 1 GiB.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { openDatabase, defaultSqliteCacheKiB } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { tempDir } from '../helpers/node-host.js';

const cacheOf = (rt: WorkflowRuntime) => ((rt as unknown as { store: { db: { pragma(s: string, o: { simple: true }): unknown } } }).store.db.pragma('cache_size', { simple: true }));

describe('the page cache of the SQLite store', () => {
  it('is 2 MiB by default and what the runtime is given otherwise', async () => {
    expect(defaultSqliteCacheKiB).toBe(2048);
    const a = await WorkflowRuntime.open({ dir: tempDir(), log: () => undefined });
    try {
      expect(cacheOf(a)).toBe(-2048);
    } finally {
      await a.close();
    }
    const b = await WorkflowRuntime.open({ dir: tempDir(), sqliteCacheKiB: 512, log: () => undefined });
    try {
      expect(cacheOf(b)).toBe(-512);
    } finally {
      await b.close();
    }
  });

  it('is set on every connection openDatabase makes', () => {
    const db = openDatabase(join(tempDir(), 'a.db'), { cacheKiB: 4096 });
    try {
      expect(db.pragma('cache_size', { simple: true })).toBe(-4096);
    } finally {
      db.close();
    }
  });

  it('refuses a size that is not an integer from 64 to 1048576 KiB, before creating the file', async () => {
    for (const bad of [0, 63, 1048577, 1.5, Number.NaN]) {
      const dir = tempDir();
      await expect(WorkflowRuntime.open({ dir, sqliteCacheKiB: bad, log: () => undefined })).rejects.toMatchObject({ code: 'store.bad-option' });
      expect(existsSync(join(dir, 'workflow.db'))).toBe(false);
    }
  });
});

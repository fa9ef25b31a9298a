// Opens the store bundle a location names: a PostgreSQL URL (several workers, several machines)
// or a SQLite file (one machine). The one place that knows which backends exist.
import { dirname, resolve } from 'node:path';
import { assertStateDirOf } from '../../shared/state-dir.js';
import type { NodeJournalStore, StoreBundle } from './bundle.js';
import { openBundle as openSqliteBundle } from './sqlite/bundle.js';
import type { PostgresStoreOptions } from './pg/journal.js';

export type { NodeJournalStore, StoreBundle };

export type StoreOptions = PostgresStoreOptions & { durability?: 'full' | 'normal'; sqliteCacheKiB?: number; sqliteQuickCheckBytesMax?: number };


/** True for `postgres://` and `postgresql://` URLs. */
export function isPostgresLocation(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** `postgres://…` / `postgresql://…` opens the PostgreSQL bundle; anything else is a SQLite file path. */
export async function openStoreBundle(location: string, options: StoreOptions = {}): Promise<StoreBundle> {
  if (isPostgresLocation(location)) {
    // Loaded on demand: a SQLite deployment never loads the PostgreSQL client.
    const { openBundle } = await import('./pg/bundle.js');
    const { durability: _, sqliteCacheKiB: _cache, sqliteQuickCheckBytesMax: _check, ...pgOptions } = options;
    // `?schema=<name>` picks the PostgreSQL schema of the store (several stores in one database).
    const url = new URL(location);
    const schema = url.searchParams.get('schema');
    url.searchParams.delete('schema');
    return openBundle(url.toString(), { ...pgOptions, ...(schema ? { schema } : {}) });
  }
  // A router's state directory is refused before SQLite creates workflow.db in it.
  if (location !== ':memory:') assertStateDirOf('node', dirname(resolve(location)));
  return openSqliteBundle(location, {
    ...(options.now ? { now: options.now } : {}),
    ...(options.durability ? { durability: options.durability } : {}),
    ...(options.sqliteCacheKiB !== undefined ? { cacheKiB: options.sqliteCacheKiB } : {}),
    ...(options.sqliteQuickCheckBytesMax !== undefined ? { quickCheckBytesMax: options.sqliteQuickCheckBytesMax } : {}),
    ...(options.artifactCodec ? { artifactCodec: options.artifactCodec } : {}),
  });
}

/** The journal of the store a location names (for callers that need only the journal). */
export async function openJournalStore(location: string, options: StoreOptions = {}): Promise<NodeJournalStore> {
  return (await openStoreBundle(location, options)).journal;
}

// Opens the journal store a location names: a PostgreSQL URL (several workers, several machines)
// or a SQLite file (one machine).
import type { RunOwnership } from '../../core/ownership-store.js';
import type { JournalStore } from '../../core/store.js';
import { dirname, resolve } from 'node:path';
import { assertStateDirOf } from '../../shared/state-dir.js';
import { SqliteJournalStore } from './sqlite/journal.js';
import type { PostgresStoreOptions } from './pg/journal.js';

/** True for `postgres://` and `postgresql://` URLs. */
export function isPostgresLocation(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** `postgres://…` / `postgresql://…` opens a `PostgresJournalStore`; anything else is a SQLite file path. */
export async function openJournalStore(location: string, options: PostgresStoreOptions & { durability?: 'full' | 'normal'; sqliteCacheKiB?: number } = {}): Promise<JournalStore & { readonly ownership: RunOwnership }> {
  if (isPostgresLocation(location)) {
    // Loaded on demand: a SQLite deployment never loads the PostgreSQL client.
    const { PostgresJournalStore } = await import('./pg/journal.js');
    const { durability: _, sqliteCacheKiB: _cache, ...pgOptions } = options;
    // `?schema=<name>` picks the PostgreSQL schema of the store (several stores in one database).
    const url = new URL(location);
    const schema = url.searchParams.get('schema');
    url.searchParams.delete('schema');
    return PostgresJournalStore.open(url.toString(), { ...pgOptions, ...(schema ? { schema } : {}) });
  }
  // A router's state directory is refused before SQLite creates workflow.db in it.
  if (location !== ':memory:') assertStateDirOf('node', dirname(resolve(location)));
  return SqliteJournalStore.open(location, { ...(options.now ? { now: options.now } : {}), ...(options.durability ? { durability: options.durability } : {}), ...(options.sqliteCacheKiB !== undefined ? { cacheKiB: options.sqliteCacheKiB } : {}) });
}

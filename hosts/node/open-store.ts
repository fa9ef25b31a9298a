// Opens the journal store a location names: a PostgreSQL URL (several workers, several machines)
// or a SQLite file (one machine).
import type { JournalStore } from '../core/store.js';
import { SqliteJournalStore } from './journal.js';
import { PostgresJournalStore, type PostgresStoreOptions } from './pg-store.js';

/** True for `postgres://` and `postgresql://` URLs. */
export function isPostgresLocation(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** `postgres://…` / `postgresql://…` opens a `PostgresJournalStore`; anything else is a SQLite file path. */
export async function openJournalStore(location: string, options: PostgresStoreOptions = {}): Promise<JournalStore> {
  if (isPostgresLocation(location)) return PostgresJournalStore.open(location, options);
  return SqliteJournalStore.open(location, options.now ? { now: options.now } : {});
}

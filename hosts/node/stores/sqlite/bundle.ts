// The SQLite store bundle: journal, ownership, catalog, triggers and deliveries in one database
// file (one machine). See `../bundle.ts`.
import { storeBundle, type StoreBundle } from '../bundle.js';
import { SqliteCatalogStorage } from './catalog.js';
import { SqliteJournalStore } from './journal.js';
import { SqliteTriggerStorage } from './triggers.js';

export async function openBundle(file: string, options: Parameters<typeof SqliteJournalStore.open>[1] = {}): Promise<StoreBundle> {
  const journal = await SqliteJournalStore.open(file, options);
  return storeBundle('sqlite', journal, {
    catalog: () => new SqliteCatalogStorage(journal.db),
    triggers: () => new SqliteTriggerStorage(journal.db, journal.ownership),
  });
}

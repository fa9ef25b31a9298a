// The PostgreSQL store bundle: journal, ownership, catalog, triggers and deliveries in one schema
// (several workers on several machines). See `../bundle.ts`.
import { storeBundle, type StoreBundle } from '../bundle.js';
import { PostgresJournalStore, type PostgresStoreOptions } from './journal.js';

export async function openBundle(connectionString: string, options: PostgresStoreOptions = {}): Promise<StoreBundle> {
  const journal = await PostgresJournalStore.open(connectionString, options);
  return storeBundle('postgres', journal, {
    catalog: () => journal.catalogStorage(),
    triggers: () => journal.triggerStorage(),
  });
}

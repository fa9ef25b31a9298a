// The store bundle a location names: the backend comes from the URL (a postgres:// URL or a
// SQLite file), and each bundle carries the journal, ownership, deliveries, catalog and trigger
// storage over the same database, the last two built once on first use.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStoreBundle } from '../../dist/hosts/node/stores/open-store.js';
import { pgUrl, testSchema } from '../helpers/postgres.js';

const schema = testSchema('bundle');

const locations: [string, () => string][] = [
  ['sqlite', () => join(mkdtempSync(join(tmpdir(), 'bundle-')), 'workflow.db')],
  ['postgres', () => `${pgUrl}?schema=${schema}`],
];

describe.each(locations)('the %s store bundle', (backend, location) => {
  it('is picked from the location and keeps every part over one database', async () => {
    const bundle = await openStoreBundle(location());
    try {
      expect(bundle.backend).toBe(backend);
      expect(bundle.ownership).toBe(bundle.journal.ownership);
      expect(bundle.deliveries).toBe(bundle.journal.deliveries);
      expect(bundle.catalog()).toBe(bundle.catalog());
      expect(bundle.triggers()).toBe(bundle.triggers());
      // What one part writes, the others see: a draft in the catalog, nothing in the journal.
      await bundle.catalog().putDraft({ id: 'b', template: Buffer.from('{}'), searchText: 'b', expectedDraftRevision: 0, at: 1, by: 'test' });
      expect((await bundle.catalog().getDraft('b'))?.draft_revision).toBe(1);
      expect(await bundle.journal.listRuns()).toEqual([]);
      expect(await bundle.triggers().listIngress({ limit: 10 })).toEqual([]);
    } finally {
      await bundle.close();
    }
  });
});

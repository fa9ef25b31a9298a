// One typed bundle of everything a Node host keeps in its store: the run journal, run ownership
// (leases, inbox, queue), the workflow catalog, the trigger tables and the delivery outbox. Each
// backend (`sqlite/bundle.ts`, `pg/bundle.ts`) builds all five over one database, so the SDK and
// its add-ons never ask which backend they hold; `open-store.ts` picks the backend from the URL.
import type { DeliveryOutbox } from '../../core/delivery-outbox.js';
import type { RunOwnership } from '../../core/ownership-store.js';
import type { JournalStore, RunListFilter, RunRecord } from '../../core/store.js';
import type { CatalogStorage } from '../catalog/catalog.js';
import type { TriggerStorage } from './trigger-storage.js';

/** An artifact as retention sees it: its digest, size and when it was last stored. */
export interface StoredArtifactInfo {
  digest: string;
  size: number;
  /** When the artifact was last stored (a put of the same bytes refreshes it), ms since the epoch. */
  storedAt: number;
}

/**
 * The journal of a Node host's store: it always carries ownership and a delivery outbox, pages
 * and filters its run list (the console's), and lists and deletes artifacts for retention.
 */
export type NodeJournalStore = JournalStore & {
  readonly ownership: RunOwnership;
  readonly deliveries: DeliveryOutbox;
  listRuns(filter?: RunListFilter): Promise<RunRecord[]> | RunRecord[];
  countRuns(): Promise<Record<string, number>> | Record<string, number>;
  /** Artifacts last stored before `cutoff`, oldest first, after `afterDigest` in digest order (paged). */
  artifactsStoredBefore(cutoff: number, options: { limit: number; afterDigest?: string }): Promise<StoredArtifactInfo[]> | StoredArtifactInfo[];
  /** Deletes each of `digests` still last stored before `cutoff` (checked in the delete itself); answers those deleted. */
  deleteArtifacts(digests: readonly string[], cutoff: number): Promise<StoredArtifactInfo[]> | StoredArtifactInfo[];
  /** A page of artifacts as kept (sealed or plain), by digest: what key rotation reads. */
  storedArtifacts(options: { limit: number; afterDigest?: string }): Promise<{ digest: string; bytes: Uint8Array }[]> | { digest: string; bytes: Uint8Array }[];
  /** Replaces an artifact's stored bytes if they are still `from` (compare-and-set); whether it did. */
  replaceStoredArtifact(digest: string, from: Uint8Array, to: Uint8Array): Promise<boolean> | boolean;
};

export interface StoreBundle {
  readonly backend: 'sqlite' | 'postgres';
  readonly journal: NodeJournalStore;
  readonly ownership: RunOwnership;
  readonly deliveries: DeliveryOutbox;
  /** Drafts and published revisions (built once, on first use). */
  catalog(): CatalogStorage;
  /** Bindings and the ingress journal (built once, on first use). */
  triggers(): TriggerStorage;
  close(): Promise<void>;
}

/** The bundle over an opened journal, with its catalog and trigger storage built on first use. */
export function storeBundle(backend: StoreBundle['backend'], journal: NodeJournalStore, parts: { catalog(): CatalogStorage; triggers(): TriggerStorage }): StoreBundle {
  let catalog: CatalogStorage | undefined;
  let triggers: TriggerStorage | undefined;
  return {
    backend,
    journal,
    ownership: journal.ownership,
    deliveries: journal.deliveries,
    catalog: () => (catalog ??= parts.catalog()),
    triggers: () => (triggers ??= parts.triggers()),
    close: async () => journal.close(),
  };
}

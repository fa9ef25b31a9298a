// `CatalogStorage` on SQLite: the catalog's tables (schema v2) in the journal's database. Every
// method answers synchronously; writes that read first run in `BEGIN IMMEDIATE` transactions, so
// a compare-and-set and the write it guards see no other writer in between.
import type { Database, Statement } from 'better-sqlite3';
import type { CatalogStorage, DraftRow, RevisionRef, RevisionRow, SearchRow } from '../../catalog/catalog.js';

export class SqliteCatalogStorage implements CatalogStorage {
  private readonly stmt: Record<'getDraft' | 'insertDraft' | 'updateDraft' | 'bumpLastRevision' | 'getRevision' | 'latestRevision' | 'listRevisions' | 'insertRevision' | 'deleteRevision' | 'search', Statement>;

  constructor(readonly db: Database) {
    this.stmt = {
      getDraft: db.prepare('SELECT * FROM workflow_drafts WHERE workflow_id = ?'),
      insertDraft: db.prepare('INSERT INTO workflow_drafts (workflow_id, draft_revision, template, search_text, last_revision, updated_at, updated_by) VALUES (?, 1, ?, ?, 0, ?, ?)'),
      updateDraft: db.prepare('UPDATE workflow_drafts SET draft_revision = draft_revision + 1, template = ?, search_text = ?, updated_at = ?, updated_by = ? WHERE workflow_id = ? AND draft_revision = ?'),
      bumpLastRevision: db.prepare('UPDATE workflow_drafts SET last_revision = ? WHERE workflow_id = ?'),
      getRevision: db.prepare('SELECT * FROM workflow_revisions WHERE workflow_id = ? AND revision = ?'),
      latestRevision: db.prepare('SELECT * FROM workflow_revisions WHERE workflow_id = ? ORDER BY revision DESC LIMIT 1'),
      listRevisions: db.prepare('SELECT * FROM workflow_revisions WHERE workflow_id = ? ORDER BY revision'),
      insertRevision: db.prepare('INSERT INTO workflow_revisions (workflow_id, revision, semantic_hash, template, search_text, draft_revision, published_at, published_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
      deleteRevision: db.prepare('DELETE FROM workflow_revisions WHERE workflow_id = ? AND revision = ?'),
      search: db
        .prepare(
          `SELECT workflow_id FROM workflow_drafts WHERE search_text LIKE ? ESCAPE '\\'
           UNION SELECT workflow_id FROM workflow_revisions WHERE search_text LIKE ? ESCAPE '\\'
           ORDER BY workflow_id LIMIT ?`,
        )
        .pluck(),
    };
  }

  getDraft(id: string): DraftRow | undefined {
    return this.stmt.getDraft.get(id) as DraftRow | undefined;
  }

  putDraft(d: { id: string; template: Buffer; searchText: string; expectedDraftRevision: number; at: number; by: string }): { row: DraftRow } | { conflict: number } {
    return this.db
      .transaction(() => {
        const row = this.getDraft(d.id);
        const current = row?.draft_revision ?? 0;
        if (current !== d.expectedDraftRevision) return { conflict: current };
        if (!row) this.stmt.insertDraft.run(d.id, d.template, d.searchText, d.at, d.by);
        else this.stmt.updateDraft.run(d.template, d.searchText, d.at, d.by, d.id, current);
        return { row: this.getDraft(d.id)! };
      })
      .immediate();
  }

  publish(p: { id: string; expectedDraftRevision: number; semanticHash: string; searchText: string; at: number; by: string }): { row: RevisionRow; created: boolean } | { conflict: number } {
    return this.db
      .transaction(() => {
        const row = this.getDraft(p.id);
        if (!row || row.draft_revision !== p.expectedDraftRevision) return { conflict: row?.draft_revision ?? 0 };
        const latest = this.stmt.latestRevision.get(p.id) as RevisionRow | undefined;
        if (latest && latest.semantic_hash === p.semanticHash) return { row: latest, created: false };
        const revision = row.last_revision + 1;
        this.stmt.insertRevision.run(p.id, revision, p.semanticHash, row.template, p.searchText, row.draft_revision, p.at, p.by);
        this.stmt.bumpLastRevision.run(revision, p.id);
        return { row: this.stmt.getRevision.get(p.id, revision) as RevisionRow, created: true };
      })
      .immediate();
  }

  getRevisions(refs: readonly RevisionRef[]): RevisionRow[] {
    return refs.map((r) => this.stmt.getRevision.get(r.id, r.revision) as RevisionRow | undefined).filter((r): r is RevisionRow => r !== undefined);
  }

  listRevisions(id: string): RevisionRow[] {
    return this.stmt.listRevisions.all(id) as RevisionRow[];
  }

  deleteRevision(id: string, revision: number): boolean {
    return this.stmt.deleteRevision.run(id, revision).changes > 0;
  }

  search(like: string, limit: number): SearchRow[] {
    const ids = this.stmt.search.all(like, like, limit) as string[];
    return ids.map((id) => {
      const draft = this.getDraft(id);
      const revisions = this.listRevisions(id);
      return {
        workflow_id: id,
        draft_revision: draft?.draft_revision ?? null,
        draft_template: draft?.template ?? null,
        revisions: revisions.map((r) => r.revision),
        latest_template: revisions.length > 0 ? revisions[revisions.length - 1].template : null,
      };
    });
  }
}

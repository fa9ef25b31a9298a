// `CatalogStorage` on PostgreSQL: the catalog's tables (schema v2) in the journal's schema, with
// the semantics of the SQLite storage (`stores/sqlite/catalog.ts`). What SQLite gets from one writer at a
// time, PostgreSQL gets from conditional writes and a row lock:
//
// - a draft write is one statement: `INSERT … ON CONFLICT DO NOTHING` for a new draft, otherwise
//   `UPDATE … WHERE draft_revision = $n` (a concurrent writer that committed first makes the
//   condition false once the row is re-read, so exactly one of two writers at one draft revision wins);
// - publish is one transaction that locks the draft's row (`FOR UPDATE`), checks its draft
//   revision and the latest revision's semantic hash, inserts revision `last_revision + 1` and
//   bumps `last_revision`: two publishers of one workflow take turns, and a number once used is
//   never used again, even after its revision is deleted;
// - search is one statement (`LIKE … ESCAPE '\'` on the lower-cased `search_text`, ids in byte
//   order through their `COLLATE "C"` column, as SQLite's BINARY collation orders them);
// - reading a closure costs one statement per level of calls (`getRevisions` of a whole level).
import type { Pool } from 'pg';
import type { CatalogStorage, DraftRow, RevisionRef, RevisionRow, SearchRow } from '../../catalog/catalog.js';
import { rows, statement, transaction } from './pool.js';

export class PgCatalogStorage implements CatalogStorage {
  /** `s`: the quoted schema name. */
  constructor(
    private readonly pool: Pool,
    private readonly s: string,
  ) {}

  async getDraft(id: string): Promise<DraftRow | undefined> {
    const [row] = await statement<DraftRow>(this.pool, 'catalog: get draft', {
      name: `${this.s}.catalogGetDraft`,
      text: `SELECT workflow_id, draft_revision, template, last_revision, updated_at, updated_by FROM ${this.s}.workflow_drafts WHERE workflow_id = $1`,
      values: [id],
    });
    return row;
  }

  async putDraft(d: { id: string; template: Buffer; searchText: string; expectedDraftRevision: number; at: number; by: string }): Promise<{ row: DraftRow } | { conflict: number }> {
    const s = this.s;
    const [row] =
      d.expectedDraftRevision === 0
        ? await statement<DraftRow>(this.pool, 'catalog: put draft', {
            name: `${s}.catalogInsertDraft`,
            text: `INSERT INTO ${s}.workflow_drafts (workflow_id, draft_revision, template, search_text, last_revision, updated_at, updated_by)
                   VALUES ($1, 1, $2, $3, 0, $4, $5)
                   ON CONFLICT (workflow_id) DO NOTHING
                   RETURNING workflow_id, draft_revision, template, last_revision, updated_at, updated_by`,
            values: [d.id, d.template, d.searchText, d.at, d.by],
          })
        : await statement<DraftRow>(this.pool, 'catalog: put draft', {
            name: `${s}.catalogUpdateDraft`,
            text: `UPDATE ${s}.workflow_drafts SET draft_revision = draft_revision + 1, template = $2, search_text = $3, updated_at = $4, updated_by = $5
                    WHERE workflow_id = $1 AND draft_revision = $6
                   RETURNING workflow_id, draft_revision, template, last_revision, updated_at, updated_by`,
            values: [d.id, d.template, d.searchText, d.at, d.by, d.expectedDraftRevision],
          });
    if (row) return { row };
    return { conflict: (await this.getDraft(d.id))?.draft_revision ?? 0 };
  }

  async publish(p: { id: string; expectedDraftRevision: number; semanticHash: string; searchText: string; at: number; by: string }): Promise<{ row: RevisionRow; created: boolean } | { conflict: number }> {
    const s = this.s;
    return transaction(this.pool, 'catalog: publish', async (c) => {
      const [draft] = await rows<{ draft_revision: number; last_revision: number }>(c, {
        name: `${s}.catalogLockDraft`,
        text: `SELECT draft_revision, last_revision FROM ${s}.workflow_drafts WHERE workflow_id = $1 FOR UPDATE`,
        values: [p.id],
      });
      if (!draft || draft.draft_revision !== p.expectedDraftRevision) return { conflict: draft?.draft_revision ?? 0 };
      const [latest] = await rows<RevisionRow>(c, {
        name: `${s}.catalogLatestRevision`,
        text: `SELECT workflow_id, revision, semantic_hash, template, draft_revision, published_at, published_by FROM ${s}.workflow_revisions WHERE workflow_id = $1 ORDER BY revision DESC LIMIT 1`,
        values: [p.id],
      });
      if (latest && latest.semantic_hash === p.semanticHash) return { row: latest, created: false };
      // The template is copied from the locked row: the draft revision that was validated.
      const [row] = await rows<RevisionRow>(c, {
        name: `${s}.catalogInsertRevision`,
        text: `WITH ins AS (
                 INSERT INTO ${s}.workflow_revisions (workflow_id, revision, semantic_hash, template, search_text, draft_revision, published_at, published_by)
                 SELECT workflow_id, $2::bigint, $3::text, template, $4::text, draft_revision, $5::bigint, $6::text FROM ${s}.workflow_drafts WHERE workflow_id = $1
                 RETURNING workflow_id, revision, semantic_hash, template, draft_revision, published_at, published_by
               ), bump AS (
                 UPDATE ${s}.workflow_drafts SET last_revision = $2::bigint WHERE workflow_id = $1
               )
               SELECT * FROM ins`,
        values: [p.id, draft.last_revision + 1, p.semanticHash, p.searchText, p.at, p.by],
      });
      return { row, created: true };
    });
  }

  async getRevisions(refs: readonly RevisionRef[]): Promise<RevisionRow[]> {
    if (refs.length === 0) return [];
    return statement<RevisionRow>(this.pool, 'catalog: get revisions', {
      name: `${this.s}.catalogGetRevisions`,
      text: `SELECT r.workflow_id, r.revision, r.semantic_hash, r.template, r.draft_revision, r.published_at, r.published_by
               FROM ${this.s}.workflow_revisions r
              WHERE (r.workflow_id, r.revision) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))`,
      values: [refs.map((r) => r.id), refs.map((r) => r.revision)],
    });
  }

  async listRevisions(id: string): Promise<RevisionRow[]> {
    return statement<RevisionRow>(this.pool, 'catalog: list revisions', {
      name: `${this.s}.catalogListRevisions`,
      text: `SELECT workflow_id, revision, semantic_hash, template, draft_revision, published_at, published_by FROM ${this.s}.workflow_revisions WHERE workflow_id = $1 ORDER BY revision`,
      values: [id],
    });
  }

  async deleteRevision(id: string, revision: number): Promise<boolean> {
    const deleted = await statement<{ revision: number }>(this.pool, 'catalog: delete revision', {
      name: `${this.s}.catalogDeleteRevision`,
      text: `DELETE FROM ${this.s}.workflow_revisions WHERE workflow_id = $1 AND revision = $2 RETURNING revision`,
      values: [id, revision],
    });
    return deleted.length > 0;
  }

  async search(like: string, limit: number): Promise<SearchRow[]> {
    const s = this.s;
    return statement<SearchRow>(this.pool, 'catalog: search', {
      name: `${s}.catalogSearch`,
      text: `WITH hits AS (
               SELECT workflow_id FROM ${s}.workflow_drafts WHERE search_text LIKE $1 ESCAPE '\\'
               UNION SELECT workflow_id FROM ${s}.workflow_revisions WHERE search_text LIKE $1 ESCAPE '\\'
               ORDER BY workflow_id LIMIT $2
             )
             SELECT h.workflow_id, d.draft_revision, d.template AS draft_template,
                    COALESCE((SELECT array_agg(r.revision::integer ORDER BY r.revision) FROM ${s}.workflow_revisions r WHERE r.workflow_id = h.workflow_id), '{}') AS revisions,
                    (SELECT r.template FROM ${s}.workflow_revisions r WHERE r.workflow_id = h.workflow_id ORDER BY r.revision DESC LIMIT 1) AS latest_template
               FROM hits h LEFT JOIN ${s}.workflow_drafts d ON d.workflow_id = h.workflow_id
              ORDER BY h.workflow_id`,
      values: [like, limit],
    });
  }
}

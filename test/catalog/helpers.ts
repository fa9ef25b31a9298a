import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { assertPostgresReachable, pgUrl } from '../helpers/postgres.js';

export const api = 'workflow.gm-hz.dev/v1alpha1';

const made: string[] = [];

export function tempDir(prefix = 'catalog-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes the directories `tempDir` made; call it once every runtime of the file is closed. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export const tools = {
  upper: { idempotent: true, execute: ({ text }: { text: string }) => ({ text: String(text).toUpperCase() }) },
};

export function openRuntime(dir: string, extra: Record<string, unknown> = {}): Promise<WorkflowRuntime> {
  return WorkflowRuntime.open({ dir, tools, log: () => undefined, ...extra });
}

/** A valid template: start -> upper (tool) -> end. */
export function upperTemplate(id: string, extra: { layout?: unknown; name?: string; description?: string } = {}): any {
  return {
    apiVersion: api,
    kind: 'WorkflowTemplate',
    metadata: { id, ...(extra.name ? { name: extra.name } : {}), ...(extra.description ? { description: extra.description } : {}) },
    spec: {
      requires: ['tool:upper'],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'upper', uses: 'tool.call@1', config: { tool: 'upper', idempotent: true }, inputs: { text: { source: 'input', path: '/word' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'upper' },
        { from: 'upper', to: 'end' },
      ],
      outputs: { text: { source: 'output', nodeId: 'upper', path: '/text' } },
    },
    ...(extra.layout !== undefined ? { layout: extra.layout } : {}),
  };
}

/** A child that upper-cases its word after a person approves. */
export function approvalChild(id: string): any {
  const t = upperTemplate(id);
  t.spec.requires.push('approval');
  t.spec.nodes.splice(1, 0, { id: 'ask', uses: 'human.approval@1', config: { prompt: 'go?' } });
  t.spec.edges = [
    { from: 'start', to: 'ask' },
    { from: 'ask', to: 'upper' },
    { from: 'upper', to: 'end' },
  ];
  return t;
}

export function callerTemplate(id: string, target: { id: string; revision: number }): any {
  return {
    apiVersion: api,
    kind: 'WorkflowTemplate',
    metadata: { id, name: `calls ${target.id}@${target.revision}` },
    spec: {
      requires: [`workflow:${target.id}`],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'call', uses: 'workflow.call@1', config: { workflow: target }, inputs: { word: { source: 'input', path: '/word' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'call' },
        { from: 'call', to: 'end' },
      ],
      outputs: { text: { source: 'output', nodeId: 'call', path: '/text' } },
    },
  };
}

/** Waits (without a deadline of its own; vitest's test timeout bounds it) until `check` holds. */
export async function waitUntil<T>(check: () => T | undefined | false | Promise<T | undefined | false>): Promise<T> {
  for (;;) {
    const v = await check();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Publishes a template as its next revision: draft put (create or update) then publish. */
export async function publish(rt: WorkflowRuntime, template: any): Promise<{ revision: number; semanticHash: string; created: boolean }> {
  const id = template.metadata.id;
  let expected = 0;
  try {
    expected = (await rt.catalog.getDraft(id)).draftRevision;
  } catch {
    expected = 0;
  }
  const draft = await rt.catalog.putDraft(template, { expectedDraftRevision: expected });
  return rt.catalog.publish(id, { expectedDraftRevision: draft.draftRevision });
}

// ---------------------------------------------------------------------------------------------
// The stores a catalog case runs against: a SQLite file in a temporary directory, or a fresh
// PostgreSQL schema (`AGENT_WORKFLOW_TEST_PG`, default postgres://postgres@127.0.0.1:5432/test).
// When PostgreSQL is unreachable the PostgreSQL cases fail and say how to start it; they are
// never skipped.

export { pgUrl };

export interface CatalogStoreHarness {
  name: 'sqlite' | 'postgres';
  /** Runtime options of a fresh, empty store; each call names another one. */
  fresh(): Record<string, unknown>;
  /** Rejects (saying how to start it) when the store's server is unreachable; checked once. */
  assertReachable(): Promise<void>;
  /** Removes every store `fresh` named (PostgreSQL: drops the schemas). */
  cleanup(): Promise<void>;
}

export function sqliteStores(): CatalogStoreHarness {
  return {
    name: 'sqlite',
    fresh: () => ({ dir: tempDir() }),
    assertReachable: async () => undefined,
    cleanup: async () => undefined,
  };
}

export function postgresStores(): CatalogStoreHarness {
  const prefix = `t_cat_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const schemas: string[] = [];
  let reachable: Promise<void> | undefined;
  return {
    name: 'postgres',
    fresh() {
      const schema = `${prefix}_${schemas.length + 1}`;
      schemas.push(schema);
      // The directory holds what is not in the store (none of the catalog).
      return { dir: tempDir(), store: `${pgUrl}${pgUrl.includes('?') ? '&' : '?'}schema=${schema}` };
    },
    assertReachable() {
      return (reachable ??= assertPostgresReachable());
    },
    async cleanup() {
      // Without a server nothing was created.
      if (schemas.length === 0 || !(await (reachable ?? assertPostgresReachable()).then(() => true, () => false))) return;
      const client = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 3000 });
      await client.connect();
      try {
        for (const s of schemas.splice(0)) await client.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

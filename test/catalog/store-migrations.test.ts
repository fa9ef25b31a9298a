// Every fixture store of an older schema opens, upgrades and serves its runs; a newer store is
// refused; a migration that dies half-way leaves the old schema usable.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { migrations, schemaVersion } from '../../dist/hosts/node/stores/sqlite/migrations.js';
// @ts-expect-error plain ESM helpers (no declarations)
import { fixtureRuns, parent, tools } from '../fixtures/stores/fixture-workflows.mjs';
import { removeTempDirs, tempDir, waitUntil } from './helpers.js';

afterAll(removeTempDirs);

const fixtures = join(__dirname, '..', 'fixtures', 'stores');
const fixtureVersions = readdirSync(fixtures)
  .map((f) => /^v([0-9]+)\.db$/.exec(f)?.[1])
  .filter((v): v is string => v !== undefined)
  .map(Number)
  .sort((a, b) => a - b);

function storeFrom(version: number): string {
  const dir = tempDir('store-fixture-');
  copyFileSync(join(fixtures, `v${version}.db`), join(dir, 'workflow.db'));
  return dir;
}

function userVersion(file: string): number {
  const db = new BetterSqlite3(file, { readonly: true });
  try {
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
}

function tables(file: string): string[] {
  const db = new BetterSqlite3(file, { readonly: true });
  try {
    return db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
  } finally {
    db.close();
  }
}

const open = (dir: string) => WorkflowRuntime.open({ dir, tools, log: () => undefined });

describe('store fixtures', () => {
  it('there is a fixture for every schema version', () => {
    expect(fixtureVersions).toEqual(migrations.map((m) => m.version));
  });

  for (const version of fixtureVersions) {
    it(`v${version}.db opens, upgrades to v${schemaVersion} and serves its runs`, async () => {
      const dir = storeFrom(version);
      const file = join(dir, 'workflow.db');
      expect(userVersion(file)).toBe(version);
      const rt = await open(dir);
      try {
        expect(userVersion(file)).toBe(schemaVersion);
        for (const [runId, expected] of Object.entries(fixtureRuns as Record<string, { status: string; output?: unknown }>)) {
          const run = await rt.getRun(runId);
          expect(run.status).toBe(expected.status);
          if ('output' in expected) expect(run.output).toEqual(expected.output);
          const page = await rt.readEvents(runId, { limit: 10_000 });
          expect(page.events.map((e: any) => e.seq)).toEqual(Array.from({ length: run.lastSeq }, (_, i) => i + 1));
          expect(page.events[0].type).toBe('run.accepted');
        }
        // A completed run resumes to its recorded result and replays without divergence.
        expect(await (await rt.resume('fx-echo-1')).result).toMatchObject({ status: 'completed', output: fixtureRuns['fx-echo-1'].output });
        // Recorded replay re-runs the current engine against runs an earlier build recorded: any
        // replay-affecting change that was not put behind a new plan flag shows up here.
        for (const runId of ['fx-echo-1', 'fx-parent-1', 'fx-fail-1']) {
          const report = await rt.replay(runId, { mode: 'recorded' }) as { identical: boolean; firstDivergence: unknown; unrecordedCapabilities: unknown };
          expect(report.identical, `recorded replay of fixture run ${runId} diverged: ${JSON.stringify({ firstDivergence: report.firstDivergence, unrecordedCapabilities: report.unrecordedCapabilities })}`).toBe(true);
        }
        // A paused run continues under the new schema.
        await rt.approve('fx-approval-1', 'ask', { by: 'upgrade-test' });
        expect(await (await rt.resume('fx-approval-1')).result).toMatchObject({ status: 'completed', output: { decision: true } });
        // The catalog works on the upgraded store.
        if (version < 2) {
          // @ts-expect-error plain ESM helpers (no declarations)
          await rt.catalog.putDraft((await import('../fixtures/stores/fixture-workflows.mjs')).child, { expectedDraftRevision: 0 });
          await rt.catalog.publish('fx-child', { expectedDraftRevision: 1 });
          await rt.catalog.putDraft(parent, { expectedDraftRevision: 0 });
        }
        expect((await rt.catalog.getRevision('fx-child', 1)).template.metadata.id).toBe('fx-child');
        expect((await rt.catalog.publish('fx-parent', { expectedDraftRevision: 1 })).revision).toBe(1);
        const handle = await rt.launch({ type: 'published', id: 'fx-parent', revision: 1 }, { input: { word: 'upgraded' } });
        expect(await handle.result).toMatchObject({ status: 'completed', output: { text: 'UPGRADED' } });
        // The outbox (schema v6) kept the delivery its run's end queued.
        if (version >= 6) {
          expect((await rt.deliveries.list({ runId: 'fx-deliver-1' })).map((d) => [d.phase, d.state, d.runStatus])).toEqual([['ended', 'pending', 'completed']]);
        } else {
          expect(await rt.deliveries.list({ runId: 'fx-deliver-1' })).toEqual([]);
        }
        // Bindings and the ingress journal (schema v7) work on the upgraded store.
        if (version >= 7) {
          expect(await rt.bindings.active('fx-hook')).toMatchObject({ revision: 1, state: 'published', target: { id: 'fx-child', revision: 1 } });
          expect(await rt.triggerStorage.listIngress({ bindingId: 'fx-hook', limit: 10 })).toEqual([expect.objectContaining({ status: 'launched', sourceEventId: 'fx-event-1', runId: expect.stringMatching(/^i-/) })]);
        }
        expect((await rt.bindings.put({ id: 'upgraded-hook', source: 'webhook', config: { secretRef: 'S' }, target: 'fx-parent@1', input: { word: { pointer: '/body/word' } } })).revision).toBe(1);
        expect((await rt.bindings.publish('upgraded-hook', 1)).state).toBe('published');
      } finally {
        await rt.close();
      }
      // Opening again is a no-op.
      const again = await open(dir);
      await again.close();
      expect(userVersion(file)).toBe(schemaVersion);
      // Schema v8: events in a rowid table under a unique (run_id, seq) index, runs by status alone.
      const db = new BetterSqlite3(file, { readonly: true });
      try {
        expect(db.prepare("SELECT sql FROM sqlite_master WHERE name = 'events'").pluck().get()).not.toMatch(/WITHOUT ROWID/i);
        const unique = (db.prepare('PRAGMA index_list(events)').all() as { name: string; unique: number }[]).filter((i) => i.unique === 1);
        expect(unique.map((i) => (db.prepare(`PRAGMA index_info(${JSON.stringify(i.name)})`).all() as { name: string }[]).map((c) => c.name))).toEqual([['run_id', 'seq']]);
        expect((db.prepare('PRAGMA index_info(runs_by_status)').all() as { name: string }[]).map((c) => c.name)).toEqual(['status']);
        // No event lost or duplicated by the copy: every run's journal is seq 1..last_seq. Schema
        // v9: a row holds events first_seq..seq (a row written before holds one, first_seq NULL),
        // and the rows of a run neither overlap nor leave a gap.
        expect(db.prepare('SELECT sum(seq - coalesce(first_seq, seq) + 1) FROM events').pluck().get()).toBe(db.prepare('SELECT sum(last_seq) FROM runs').pluck().get());
        const rows = db.prepare('SELECT run_id, coalesce(first_seq, seq) AS first, seq FROM events ORDER BY run_id, seq').all() as { run_id: string; first: number; seq: number }[];
        const next = new Map<string, number>();
        for (const r of rows) {
          expect(r.first, `run ${r.run_id}`).toBe((next.get(r.run_id) ?? 0) + 1);
          next.set(r.run_id, r.seq);
        }
        // The runs the upgraded store ran wrote a commit's events in one row.
        expect(db.prepare('SELECT count(*) FROM events WHERE first_seq IS NOT NULL AND seq > first_seq').pluck().get()).toBeGreaterThan(0);
      } finally {
        db.close();
      }
    });
  }

  it('a store newer than this program is refused with a clear message and left untouched', async () => {
    const dir = storeFrom(fixtureVersions[fixtureVersions.length - 1]);
    const file = join(dir, 'workflow.db');
    const db = new BetterSqlite3(file);
    db.pragma(`user_version = ${schemaVersion + 1}`);
    db.close();
    const before = tables(file);
    const err = await open(dir).then(
      () => undefined,
      (e) => e,
    );
    expect(err).toMatchObject({ code: 'store.schema-too-new' });
    expect(err.message).toContain(`schema version ${schemaVersion + 1}, newer than this program understands (${schemaVersion})`);
    // Left as it was (opening switches the journal mode to WAL, a header change only).
    expect(userVersion(file)).toBe(schemaVersion + 1);
    expect(tables(file)).toEqual(before);
  });
});

describe('interrupted migrations', () => {
  it('a process killed inside a migration leaves the old schema usable, and the next open upgrades', async () => {
    const dir = storeFrom(1);
    const file = join(dir, 'workflow.db');
    const marker = join(dir, 'marker');
    const child = spawn(process.execPath, [join(__dirname, 'migration-child.mjs'), file, marker], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await waitUntil(() => existsSync(marker));
    expect(readFileSync(marker, 'utf8')).toBe('inside the v2 migration\n');
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    // The half-done migration is gone: schema v1, no catalog tables, the runs intact.
    expect(userVersion(file)).toBe(1);
    expect(tables(file)).toEqual(['events', 'runs']);

    const rt = await open(dir);
    try {
      expect(userVersion(file)).toBe(schemaVersion);
      expect(await rt.getRun('fx-echo-1')).toMatchObject({ status: 'completed', output: fixtureRuns['fx-echo-1'].output });
      expect(await rt.catalog.search('half')).toEqual([]);
      expect(await (await rt.resume('fx-parent-1')).result).toMatchObject({ status: 'completed', output: fixtureRuns['fx-parent-1'].output });
    } finally {
      await rt.close();
    }
  });

  it('a migration step that throws rolls back and the store stays at the old version', async () => {
    const dir = storeFrom(1);
    const file = join(dir, 'workflow.db');
    const v2 = migrations.find((m) => m.version === 2)!;
    const up = v2.up;
    (v2 as { up: typeof up }).up = (db) => {
      up(db);
      throw new Error('injected failure after the v2 tables were created');
    };
    try {
      await expect(open(dir)).rejects.toThrow('injected failure');
    } finally {
      (v2 as { up: typeof up }).up = up;
    }
    expect(userVersion(file)).toBe(1);
    expect(tables(file)).toEqual(['events', 'runs']);
    const rt = await open(dir);
    try {
      expect((await rt.getRun('fx-fail-1')).status).toBe('failed');
      expect(tables(file)).toContain('workflow_revisions');
    } finally {
      await rt.close();
    }
  });
});

// Artifact retention on SQLite and PostgreSQL: artifacts past the deployment's TTL go, unless an
// unfinished run names them or a run has just stored the same bytes again; journals stay; a dry
// run deletes nothing; `agent-workflow gc` says the same from the command line.
import BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { WorkflowRuntime, type RuntimeOptions } from '../../dist/hosts/node/index.js';
import { runCli } from '../helpers/cli.js';
import { chain, tempDir } from '../helpers/node-host.js';
import { pgUrl, testSchema } from '../helpers/postgres.js';

const day = 86_400_000;
const schema = testSchema('adw_retention');

// Every output over 8 bytes is an artifact; `big` answers a distinct large payload per input.
const capture = { inlineBytesMax: 8 };
const tools = { big: { idempotent: true, execute: (input: { tag: string }) => ({ tag: input.tag, filler: 'x'.repeat(200) }) } };
const oneCall = chain('one-call', [{ id: 'call', uses: 'tool.call@1', config: { tool: 'big' }, inputs: { tag: { source: 'input', path: '/tag' } } }], { requires: ['tool:big'] });
const gated = chain('gated-call', [{ id: 'call', uses: 'tool.call@1', config: { tool: 'big' }, inputs: { tag: { source: 'input', path: '/tag' } } }, { id: 'gate', uses: 'human.approval@1' }], { requires: ['tool:big', 'approval'] });

function open(base: Pick<RuntimeOptions, 'dir' | 'store'>, extra: Partial<RuntimeOptions> = {}): Promise<WorkflowRuntime> {
  return WorkflowRuntime.open({ ...base, log: () => undefined, tools, ...extra, capture: { ...capture, ...(extra.capture ?? {}) } });
}

/** Makes every artifact stored so far look `days` older (as if the runs that stored them ran then). */
async function age(where: Pick<RuntimeOptions, 'dir' | 'store'>, days: number): Promise<void> {
  if (where.store) {
    const url = new URL(where.store);
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    await client.query(`UPDATE ${url.searchParams.get('schema')}.artifacts SET created_at = created_at - $1`, [days * day]);
    await client.end();
  } else {
    const db = new BetterSqlite3(join(where.dir!, 'workflow.db'));
    db.prepare('UPDATE artifacts SET created_at = created_at - ?').run(days * day);
    db.close();
  }
}

const artifactOf = async (rt: WorkflowRuntime, runId: string) => {
  const events = (await rt.readEvents(runId, { limit: 1000 })).events;
  const found = events.find((e) => e.type === "capability.completed" && e.payload.artifact);
  if (!found) throw new Error(JSON.stringify(events.map((e) => [e.type, e.payload])).slice(0, 3000));
  return found.payload.artifact.digest as string;
};

const backends: [string, () => Pick<RuntimeOptions, 'dir' | 'store'>][] = [
  ['SQLite', () => ({ dir: tempDir('adw-retention-') })],
  ['PostgreSQL', () => ({ dir: tempDir('adw-retention-'), store: `${pgUrl}?schema=${schema}_${Math.random().toString(16).slice(2, 8)}` })],
];

describe('artifact retention', () => {
  for (const [name, base] of backends) {
    it(`${name}: collects what expired, keeps what unfinished runs name and what was stored again, and keeps every journal`, async () => {
      const where = base();
      // Stored forty days ago: a finished run, a run still waiting at its gate, and a finished run whose bytes come back today.
      const old = await open(where);
      const finished = await (await old.launch({ type: 'inline', template: oneCall }, { input: { tag: 'finished' } })).settled();
      const waiting = await (await old.launch({ type: 'inline', template: gated }, { input: { tag: 'waiting' } })).settled();
      const again = await (await old.launch({ type: 'inline', template: oneCall }, { input: { tag: 'again' } })).settled();
      expect([finished.status, waiting.status, again.status]).toEqual(['completed', 'paused', 'completed']);
      const [a, b, c] = [await artifactOf(old, finished.runId), await artifactOf(old, waiting.runId), await artifactOf(old, again.runId)];
      await old.close();
      await age(where, 40);

      const rt = await open(where, { capture: { retentionDays: 30 } });
      try {
        // Today a run stores c's bytes again.
        const today = await (await rt.launch({ type: 'inline', template: oneCall }, { input: { tag: 'again' } })).settled();
        expect(await artifactOf(rt, today.runId)).toBe(c);

        const dry = await rt.artifacts.collect({ dryRun: true });
        expect(dry).toMatchObject({ dryRun: true, retentionDays: 30, expired: 2, keptForUnfinishedRuns: 1, deleted: 1, unfinishedRuns: 1 });
        expect((await rt.exportRun(finished.runId)).artifacts[a]).toBeDefined();

        const done = await rt.artifacts.collect();
        expect(done).toMatchObject({ dryRun: false, expired: 2, keptForUnfinishedRuns: 1, deleted: 1 });
        expect(done.deletedBytes).toBeGreaterThan(200);
        // a is gone; its run's journal is whole and still inspects.
        const exported = await rt.exportRun(finished.runId);
        expect(exported.artifacts[a]).toBeUndefined();
        expect(exported.events.length).toBe(finished.seq);
        expect(await rt.replay(finished.runId, { mode: 'inspect' })).toMatchObject({ outcome: { status: 'completed' } });
        await expect(rt.replay(finished.runId, { mode: 'recorded' })).rejects.toMatchObject({ code: 'replay.artifact-missing' });
        // b stays for the run that needs it: approved today, it completes with its output.
        expect((await rt.exportRun(waiting.runId)).artifacts[b]).toBeDefined();
        await rt.approve(waiting.runId, 'gate', { by: 'alice' });
        expect(await rt.follow(waiting.runId).settled()).toMatchObject({ status: 'completed' });
        expect((await rt.exportRun(again.runId)).artifacts[c]).toBeDefined();
        // Its run finished, b is collected in turn; c stays (stored again today).
        expect(await rt.artifacts.collect()).toMatchObject({ expired: 1, keptForUnfinishedRuns: 0, deleted: 1 });
        expect(await rt.artifacts.collect()).toMatchObject({ expired: 0, deleted: 0 });
      } finally {
        await rt.close();
      }
    });
  }

  it('needs a retention time, given or configured', async () => {
    const rt = await open({ dir: tempDir('adw-retention-') });
    try {
      await expect(rt.artifacts.collect()).rejects.toMatchObject({ code: 'gc.no-retention' });
      await expect(rt.artifacts.collect({ retentionDays: -1 })).rejects.toMatchObject({ code: 'gc.no-retention' });
    } finally {
      await rt.close();
    }
    await expect(WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, capture: { retentionDays: 0 } })).rejects.toMatchObject({ code: 'policy.unsupported' });
  });

  it('agent-workflow gc: a dry run counts, a run deletes, no retention time is a usage error', async () => {
    const dir = tempDir('adw-retention-');
    const old = await open({ dir });
    const run = await (await old.launch({ type: 'inline', template: oneCall }, { input: { tag: 'cli' } })).settled();
    const digest = await artifactOf(old, run.runId);
    await old.close();
    await age({ dir }, 40);

    const usage = await runCli(['gc', '--dir', dir]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--retention-days');

    const dry = await runCli(['gc', '--dir', dir, '--retention-days', '30', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.out[0]).toMatchObject({ kind: 'GcReport', dryRun: true, expired: 1, deleted: 1 });
    const gone = await runCli(['gc', '--dir', dir, '--retention-days', '30']);
    expect(gone.out[0]).toMatchObject({ kind: 'GcReport', dryRun: false, deleted: 1 });
    const exported = await runCli(['export', run.runId, '--dir', dir]);
    expect(exported.code).toBe(0);
    expect(exported.stdout).not.toContain(digest.slice(7) + '":{');
    expect((await runCli(['gc', '--dir', dir, '--retention-days', '30'])).out[0]).toMatchObject({ deleted: 0 });
  });
});

// A stored run whose plan flags or checkpoint schema this engine does not support is refused
// (needs_attention, with the run id), never guessed at; a changed node-definition set is reported.
import BetterSqlite3 from 'better-sqlite3';
import { crc32 } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CatalogError, RunNeedsAttentionError, canonicalDigest } from '../../dist/hosts/node/catalog/catalog.js';
import { approvalChild, openRuntime, publish, removeTempDirs, tempDir, upperTemplate } from './helpers.js';

afterAll(removeTempDirs);

/** A run paused at an approval (it has a checkpoint), in a closed store. */
async function pausedRun(dir: string, runId: string): Promise<number> {
  const rt = await openRuntime(dir);
  try {
    const outcome = await (await rt.launch({ type: 'inline', template: approvalChild('gate') }, { runId, input: { word: 'w' } })).settled();
    expect(outcome.status).toBe('paused');
    return outcome.seq;
  } finally {
    await rt.close();
  }
}

function rewrite(dir: string, runId: string, column: 'plan' | 'checkpoint', edit: (value: any) => void): void {
  const db = new BetterSqlite3(join(dir, 'workflow.db'));
  try {
    const value = JSON.parse((db.prepare(`SELECT ${column} FROM runs WHERE run_id = ?`).pluck().get(runId) as Buffer).toString('utf8'));
    edit(value);
    // Written as a store writes it (another program's plan or checkpoint), its checksum with it.
    const bytes = Buffer.from(JSON.stringify(value));
    db.prepare(`UPDATE runs SET ${column} = ?, ${column}_crc = ? WHERE run_id = ?`).run(bytes, crc32(bytes), runId);
  } finally {
    db.close();
  }
}

describe('in-flight safety', () => {
  it('a plan with an engine flag this engine does not know is refused, and the journal is left alone', async () => {
    const dir = tempDir();
    const seq = await pausedRun(dir, 'flagged-1');
    rewrite(dir, 'flagged-1', 'plan', (plan) => plan.flags.push('events-v9'));
    const rt = await openRuntime(dir);
    try {
      const report = await rt.checkRun('flagged-1');
      expect(report).toEqual({
        runId: 'flagged-1',
        ok: false,
        problems: [{ code: 'engine.plan-unsupported', severity: 'needs_attention', message: 'run flagged-1 pins plan version 1 with flags this engine does not support: events-v9' }],
      });
      let err: any;
      try {
        await rt.assertRunnable('flagged-1');
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(RunNeedsAttentionError);
      expect(err).toMatchObject({ code: 'run.needs-attention', runId: 'flagged-1', detail: { runId: 'flagged-1', status: 'needs_attention' } });
      // Resume refuses too (the engine's code, or run.needs-attention once resume asks
      // assertRunnable first); nothing is appended.
      await expect(rt.resume('flagged-1')).rejects.toMatchObject({ code: expect.stringMatching(/^(engine\.plan-unsupported|run\.needs-attention)$/) });
      await expect(rt.approve('flagged-1', 'ask', { by: 'ops' })).rejects.toMatchObject({ code: 'engine.plan-unsupported' });
      expect(await rt.getRun('flagged-1')).toMatchObject({ status: 'paused', lastSeq: seq });
    } finally {
      await rt.close();
    }
  });

  it('a checkpoint of an unknown schema version is refused with the run id', async () => {
    const dir = tempDir();
    const seq = await pausedRun(dir, 'checkpointed-1');
    rewrite(dir, 'checkpointed-1', 'checkpoint', (state) => {
      state.checkpointVersion = 99;
    });
    const rt = await openRuntime(dir);
    try {
      expect((await rt.checkRun('checkpointed-1')).problems).toEqual([
        { code: 'engine.checkpoint-unsupported', severity: 'needs_attention', message: 'run checkpointed-1 has checkpoint version 99; this engine reads 1' },
      ]);
      await expect(rt.assertRunnable('checkpointed-1')).rejects.toThrow(RunNeedsAttentionError);
      await expect(rt.resume('checkpointed-1')).rejects.toMatchObject({ code: expect.stringMatching(/^(engine\.checkpoint-unsupported|run\.needs-attention)$/), message: expect.stringContaining('checkpointed-1') });
      expect((await rt.getRun('checkpointed-1')).lastSeq).toBe(seq);
    } finally {
      await rt.close();
    }
  });

  it('an untouched run passes the check (the twin of the two above)', async () => {
    const dir = tempDir();
    await pausedRun(dir, 'plain-1');
    const rt = await openRuntime(dir);
    try {
      expect(await rt.checkRun('plain-1')).toEqual({ runId: 'plain-1', ok: true, problems: [] });
      await rt.assertRunnable('plain-1');
      await rt.approve('plain-1', 'ask', { by: 'ops' });
      expect(await (await rt.resume('plain-1')).result).toMatchObject({ status: 'completed' });
    } finally {
      await rt.close();
    }
  });
});

describe('custom node definitions', () => {
  const ocr = (implementationDigest?: string) => ({ uses: 'acme.ocr@1', configSchema: { type: 'object', properties: { language: { type: 'string' } } }, ...(implementationDigest ? { implementationDigest } : {}) });

  it('are folded into the pinned nodeDefinitionSetHash; a changed digest is detected', async () => {
    const dir = tempDir();
    const rt1 = await openRuntime(dir);
    const engineHash = rt1.engine.describe().nodeDefinitionSetHash;
    rt1.nodeDefinitions.register(ocr('sha256:ocr-build-1'));
    const hash1 = rt1.nodeDefinitionSetHash();
    expect(hash1).not.toBe(engineHash);
    await publish(rt1, upperTemplate('with-defs'));
    await (await rt1.launch({ type: 'published', id: 'with-defs', revision: 1 }, { runId: 'defs-1', input: { word: 'a' } })).result;
    const plan = (await rt1.exportRun('defs-1')).plan;
    expect(plan.nodeDefinitionSetHash).toBe(hash1);
    expect(plan.replayable).toBe(true);
    const { planHash, ...body } = plan;
    expect(planHash).toBe(canonicalDigest(body));
    expect(await rt1.checkRun('defs-1')).toEqual({ runId: 'defs-1', ok: true, problems: [] });
    await rt1.close();

    const rt2 = await openRuntime(dir);
    try {
      rt2.nodeDefinitions.register(ocr('sha256:ocr-build-2'));
      const report = await rt2.checkRun('defs-1');
      expect(report.ok).toBe(true);
      expect(report.problems).toEqual([
        { code: 'run.node-definitions-changed', severity: 'warning', message: `run defs-1 was planned with node definition set ${hash1}; the host now has ${rt2.nodeDefinitionSetHash()} (a definition's schema or implementation digest changed)` },
      ]);
      rt2.nodeDefinitions.register(ocr('sha256:ocr-build-1'));
      expect((await rt2.checkRun('defs-1')).problems).toEqual([]);
      // Recorded replay still reads only the pinned plan.
      expect(await rt2.replay('defs-1', { mode: 'recorded' })).toMatchObject({ identical: true });
    } finally {
      await rt2.close();
    }
  });

  it('a template using a definition without an implementation digest cannot be published', async () => {
    const rt = await openRuntime(tempDir());
    try {
      rt.nodeDefinitions.register(ocr());
      const t = upperTemplate('scan');
      t.spec.requires.push('node:acme.ocr');
      t.spec.nodes.splice(2, 0, { id: 'ocr', uses: 'acme.ocr@1', config: { language: 'de' } });
      t.spec.edges = [
        { from: 'start', to: 'upper' },
        { from: 'upper', to: 'ocr' },
        { from: 'ocr', to: 'end' },
      ];
      await rt.catalog.putDraft(t, { expectedDraftRevision: 0 });
      let err: any;
      try {
        await rt.catalog.publish('scan', { expectedDraftRevision: 1 });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CatalogError);
      // The engine accepts the type; only the missing digest refuses it.
      expect(err.errors.map((e: any) => `${e.code} ${e.pointer}`)).toEqual(['node.definition-undigested /spec/nodes/2/uses']);
      // A development run of it is possible, and not replayable.
      expect((await rt.compile(t)).replayable).toBe(false);
      expect(await rt.catalog.listRevisions('scan')).toEqual([]);
    } finally {
      await rt.close();
    }
  });
});

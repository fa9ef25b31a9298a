// Artifacts, the capture policy, and secrets that never reach the journal.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { replayExport } from '../../dist/hosts/node/sdk/export.js';
import type { SqliteJournalStore } from '../../dist/hosts/node/stores/sqlite/journal.js';
import { caseNames, loadCase } from '../helpers/cases.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';

const big = { rows: Array.from({ length: 2000 }, (_, i) => ({ id: i, text: `row ${i} of a large result` })) };

function bigTemplate(capture?: string) {
  const t = chain('big', [
    { id: 'fetch', uses: 'tool.call@1', config: { tool: 'fetch' } },
    { id: 'count', uses: 'core.script@1', config: { source: 'return input.data.rows.length' }, inputs: { data: { source: 'output', nodeId: 'fetch' } } },
  ]);
  t.spec.requires = ['tool:fetch'];
  t.spec.outputs = { count: { source: 'output', nodeId: 'count' } };
  if (capture) t.spec.policies = { capture };
  return t;
}

const completedOf = (events: any[]) => events.find((e) => e.type === 'capability.completed').payload;

describe('artifacts and the capture policy', () => {
  it('stores a large result once, by digest, and replays it from the store and from an export', async () => {
    const rt = await openRuntime({ tools: { fetch: () => big } });
    try {
      const a = await rt.launch(bigTemplate());
      expect(await a.result).toMatchObject({ status: 'completed', output: { count: 2000 } });
      const b = await rt.launch(bigTemplate());
      await b.result;
      const payload = completedOf((await rt.readEvents(a.runId)).events);
      expect(payload.output).toBeUndefined();
      expect(payload.artifact).toMatchObject({ digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), mediaType: 'application/json', redacted: false });
      expect(payload.artifact.size).toBe(JSON.stringify(big).length);
      expect(completedOf((await rt.readEvents(b.runId)).events).artifact.digest).toBe(payload.artifact.digest);
      const rows = (rt.store as SqliteJournalStore).db.prepare('SELECT count(*) AS n FROM artifacts').get() as { n: number };
      expect(rows.n).toBe(1);
      expect((await rt.replay(a.runId, { mode: 'recorded' })).identical).toBe(true);
      const exported = await rt.exportRun(a.runId);
      expect(Object.keys(exported.artifacts)).toEqual([payload.artifact.digest]);
      expect((await replayExport(exported, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it('redacts results above maxArtifactBytes under the standard policy; recorded replay then refuses clearly', async () => {
    const rt = await openRuntime({ tools: { fetch: () => big }, capture: { mode: 'standard', maxArtifactBytes: 1024 } });
    try {
      const run = await rt.launch(bigTemplate());
      expect((await run.result).status).toBe('completed');
      const payload = completedOf((await rt.readEvents(run.runId)).events);
      expect(payload.artifact.redacted).toBe(true);
      expect((rt.store as SqliteJournalStore).db.prepare('SELECT count(*) AS n FROM artifacts').get()).toEqual({ n: 0 });
      await expect(rt.replay(run.runId, { mode: 'recorded' })).rejects.toThrow(expect.objectContaining({ code: 'replay.artifact-missing', message: expect.stringContaining('redacted by the capture policy') }));
      expect(await rt.replay(run.runId, { mode: 'inspect' })).toMatchObject({ outcome: { status: 'completed', output: { count: 2000 } } });
    } finally {
      await rt.close();
    }
  });

  it('keeps only metadata under the metadata policy, even for small results', async () => {
    const rt = await openRuntime({ tools: { echo: (i: { text: string }) => ({ text: i.text }) }, capture: { mode: 'metadata' } });
    try {
      const c = await loadCase('echo-tool');
      const run = await rt.launch(c.template, { input: c.input });
      expect(await run.result).toMatchObject({ status: 'completed', output: { text: 'hi' } });
      expect(completedOf((await rt.readEvents(run.runId)).events)).toMatchObject({ artifact: { redacted: true, size: 13 } });
    } finally {
      await rt.close();
    }
  });

  it('lets a template narrow the policy but never widen it', async () => {
    const wide = await openRuntime({ tools: { fetch: () => big } });
    const narrow = await openRuntime({ tools: { fetch: () => big }, capture: { mode: 'metadata' } });
    try {
      const narrowed = await wide.launch(bigTemplate('metadata'));
      await narrowed.result;
      expect(completedOf((await wide.readEvents(narrowed.runId)).events).artifact.redacted).toBe(true);
      const widened = await narrow.launch(bigTemplate('replayable'));
      await widened.result;
      expect(completedOf((await narrow.readEvents(widened.runId)).events).artifact.redacted).toBe(true);
    } finally {
      await wide.close();
      await narrow.close();
    }
  });
});

describe('secrets', () => {
  const planted = 'sk-live-PLANTED-7f3a9c1e5b2d4086';

  it('reach tools through credential references and appear in no journal, checkpoint, artifact or export', async () => {
    const dir = tempDir();
    const seen: unknown[] = [];
    const credentials = ({ credentialRef }: { credentialRef?: string }) => ({ credential: credentialRef === 'search-api' ? planted : undefined });
    const rt = await openRuntime({
      dir,
      credentials,
      tools: {
        search: (input: { q: string }, ctx: { credential?: unknown }) => {
          seen.push(ctx.credential);
          if (ctx.credential !== planted) throw Object.assign(new Error('unauthorised'), { code: 'search.unauthorised' });
          return { hits: [`result for ${input.q}`], authorised: true, big: 'x'.repeat(20_000) };
        },
      },
    });
    const exports: string[] = [];
    try {
      const t = chain('secret', [{ id: 'search', uses: 'tool.call@1', config: { tool: 'search', credentialRef: 'search-api' }, inputs: { q: { source: 'input', path: '/q' } } }]);
      t.spec.requires = ['tool:search'];
      t.spec.outputs = { ok: { source: 'output', nodeId: 'search', path: '/authorised' } };
      const run = await rt.launch(t, { input: { q: 'workflows' } });
      expect(await run.result).toMatchObject({ status: 'completed', output: { ok: true } });
      expect(seen).toEqual([planted]);
      exports.push(JSON.stringify(await rt.exportRun(run.runId)));
      // Every other case too, so the scan covers checkpoints, approvals and failures.
      for (const name of caseNames()) {
        const c = await loadCase(name);
        const other = await openRuntime({ dir, credentials, ...c.host });
        const h = await other.launch({ type: 'inline', template: c.template, dependencies: c.host.dependencies ?? [] }, { input: c.input });
        await h.settled();
        exports.push(JSON.stringify(await other.exportRun(h.runId)));
        await other.close();
      }
    } finally {
      await rt.close();
    }
    const files = readdirSync(dir).map((f) => join(dir, f));
    expect(files.some((f) => f.endsWith('workflow.db'))).toBe(true);
    for (const f of files) expect(readFileSync(f).includes(planted), `${f} holds the planted secret`).toBe(false);
    for (const e of exports) expect(e.includes(planted)).toBe(false);
    expect(exports.length).toBe(caseNames().length + 1);
  });

  it('fails the node clearly when a credential reference cannot be resolved', async () => {
    const rt = await openRuntime({ tools: { search: () => ({}) } });
    try {
      const t = chain('no-resolver', [{ id: 'search', uses: 'tool.call@1', config: { tool: 'search', credentialRef: 'search-api' } }]);
      t.spec.requires = ['tool:search'];
      const outcome = await (await rt.launch(t)).result;
      expect((outcome.error?.detail as any).error.code).toBe('credential.unresolved');
    } finally {
      await rt.close();
    }
  });
});

describe('secrets in what tools return', () => {
  it('a credential that a tool puts in its error message or output is journaled as [redacted]', async () => {
    const secret = 'sk-live-123456';
    const dir = tempDir();
    const rt = await openRuntime({
      dir,
      credentials: ({ credentialRef, connectionRef }: { credentialRef?: string; connectionRef?: string }) => ({
        ...(credentialRef ? { credential: secret } : {}),
        ...(connectionRef ? { connection: { url: 'https://db.example', password: 'pw-0987654321' } } : {}),
      }),
      tools: {
        pay: (_input: unknown, ctx: { credential?: unknown }) => {
          throw new Error(`auth failed for token ${String(ctx.credential)}`);
        },
        echo: (_input: unknown, ctx: { credential?: unknown; connection?: any }) => ({ token: ctx.credential, note: `connected with ${ctx.connection.password}` }),
      },
    });
    const texts: string[] = [];
    try {
      const failing = chain('leaky-error', [{ id: 'pay', uses: 'tool.call@1', config: { tool: 'pay', credentialRef: 'billing' } }]);
      failing.spec.requires = ['tool:pay'];
      const failed = await (await rt.launch(failing)).result;
      expect(failed.status).toBe('failed');
      expect((failed.error?.detail as any).error).toMatchObject({ code: 'tool.error', message: 'auth failed for token [redacted]' });
      const leaky = chain('leaky-output', [{ id: 'echo', uses: 'tool.call@1', config: { tool: 'echo', credentialRef: 'billing', connectionRef: 'db' } }]);
      leaky.spec.requires = ['tool:echo'];
      leaky.spec.outputs = { token: { source: 'output', nodeId: 'echo', path: '/token' }, note: { source: 'output', nodeId: 'echo', path: '/note' } };
      const echoed = await rt.launch(leaky);
      expect(await echoed.result).toMatchObject({ status: 'completed', output: { token: '[redacted]', note: 'connected with [redacted]' } });
      for (const run of await rt.listRuns()) {
        texts.push(JSON.stringify(await rt.exportRun(run.runId)), JSON.stringify((await rt.readEvents(run.runId)).events), JSON.stringify(await rt.getRun(run.runId)));
      }
    } finally {
      await rt.close();
    }
    expect(texts.length).toBe(6);
    for (const t of texts) expect(t.includes(secret) || t.includes('pw-0987654321')).toBe(false);
    const files = readdirSync(dir).map((f) => join(dir, f));
    for (const f of files) expect(readFileSync(f).includes(secret), `${f} holds the credential`).toBe(false);
    for (const f of files) expect(readFileSync(f).includes('pw-0987654321'), `${f} holds the connection password`).toBe(false);
  });
});

describe('capture mode metadata keeps no payloads in the store', () => {
  const unique = 'UNIQ-payload-4f9c2e71a8d3';

  function payloadTemplate() {
    const t = chain('payloads', [
      { id: 'echo', uses: 'tool.call@1', config: { tool: 'echo' }, inputs: { text: { source: 'input', path: '/text' } } },
      { id: 'shout', uses: 'core.script@1', config: { source: "return input.t + '!'" }, inputs: { t: { source: 'output', nodeId: 'echo', path: '/text' } } },
      { id: 'gate', uses: 'human.approval@1' },
      { id: 'each', uses: 'core.foreach@1', config: { body: { uses: 'tool.call@1', config: { tool: 'echo' } } }, inputs: { items: { source: 'input', path: '/list' } } },
    ]);
    t.spec.requires = ['tool:echo', 'approval'];
    t.spec.outputs = { shout: { source: 'output', nodeId: 'shout' }, each: { source: 'output', nodeId: 'each', path: '/results' } };
    return t;
  }
  const input = { text: unique, list: [{ text: `${unique}-a` }, { text: `${unique}-b` }] };
  const expected = { shout: `${unique}!`, each: [{ text: `${unique}-a` }, { text: `${unique}-b` }] };
  const occurrences = (dir: string) => readdirSync(dir).reduce((n, f) => n + readFileSync(join(dir, f)).toString('latin1').split(unique).length - 1, 0);

  async function runIn(dir: string, mode: 'metadata' | 'standard' | 'replayable') {
    const rt = await openRuntime({ dir, tools: { echo: (i: { text: string }) => ({ text: i.text }) }, capture: { mode } });
    try {
      const handle = await rt.launch(payloadTemplate(), { input });
      expect((await handle.settled()).status).toBe('paused');
      await rt.approve(handle.runId, 'gate', { by: 'alice' });
      const outcome = await handle.result;
      return { rt, runId: handle.runId, outcome, events: (await rt.readEvents(handle.runId)).events, inDbBeforeClose: occurrences(dir) };
    } catch (err) {
      await rt.close();
      throw err;
    }
  }

  it('journals digests and sizes, no checkpoint payloads, and the run still completes in memory', async () => {
    const dir = tempDir();
    const { rt, runId, outcome, events, inDbBeforeClose } = await runIn(dir, 'metadata');
    try {
      expect(outcome).toMatchObject({ status: 'completed', output: expected });
      expect(inDbBeforeClose).toBe(0);
      expect(JSON.stringify(events).includes(unique)).toBe(false);
      const accepted = events[0].payload;
      expect(accepted).toMatchObject({ capture: 'metadata', inputDigest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), inputBytes: JSON.stringify(input).length });
      expect(accepted.input).toBeUndefined();
      const committed = events.filter((e) => e.type === 'node.output-committed' && e.node.id === 'shout')[0].payload;
      expect(committed).toEqual({ outputDigest: expect.stringMatching(/^sha256:/), outputBytes: JSON.stringify(`${unique}!`).length });
      expect(events.find((e) => e.type === 'run.completed').payload.outputDigest).toMatch(/^sha256:/);
      expect(events.find((e) => e.type === 'node.started' && e.node.id === 'each').payload.foreach).toMatchObject({ itemsCount: 2, itemsDigest: expect.stringMatching(/^sha256:/) });
      // The store's projection has no result either; inspect works on the digests.
      const stored = await rt.getRun(runId);
      expect(stored.status).toBe('completed');
      expect(stored.output).toBeUndefined();
      expect(await rt.replay(runId, { mode: 'inspect' })).toMatchObject({ outcome: { status: 'completed' } });
      await expect(rt.replay(runId, { mode: 'recorded' })).rejects.toMatchObject({ code: 'replay.payloads-not-kept' });
      await expect(rt.replayLive(runId)).rejects.toMatchObject({ code: 'replay.payloads-not-kept' });
      expect(JSON.stringify(await rt.exportRun(runId)).includes(unique)).toBe(false);
    } finally {
      await rt.close();
    }
    expect(occurrences(dir)).toBe(0);
  });

  it('standard and replayable runs still keep the payloads', async () => {
    for (const mode of ['standard', 'replayable'] as const) {
      const dir = tempDir();
      const { rt, runId, outcome } = await runIn(dir, mode);
      try {
        expect(outcome).toMatchObject({ status: 'completed', output: expected });
        expect((await rt.replay(runId, { mode: 'recorded' })).identical).toBe(true);
      } finally {
        await rt.close();
      }
      expect(occurrences(dir)).toBeGreaterThan(0);
    }
  });

  it('a metadata run rebuilt cold in another process fails with run.payloads-not-kept instead of binding missing data', async () => {
    const dir = tempDir();
    const echo = (i: { text: string }) => ({ text: i.text });
    const first = await openRuntime({ dir, tools: { echo }, capture: { mode: 'metadata' } });
    const handle = await first.launch(payloadTemplate(), { input });
    expect((await handle.settled()).status).toBe('paused');
    await first.close();
    const second = await openRuntime({ dir, tools: { echo }, capture: { mode: 'metadata' } });
    try {
      await second.approve(handle.runId, 'gate', { by: 'alice' });
      const outcome = await second.follow(handle.runId).result;
      expect(outcome).toMatchObject({ status: 'failed', error: { code: 'run.payloads-not-kept' } });
      expect((await second.readEvents(handle.runId)).events.some((e) => e.type === 'node.started' && e.node.id === 'each')).toBe(false);
    } finally {
      await second.close();
    }
    expect(occurrences(dir)).toBe(0);
  });
});

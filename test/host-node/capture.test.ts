// Artifacts, the capture policy, and secrets that never reach the journal.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { replayExport } from '../../dist/hosts/node/export.js';
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
      const rows = rt.store.db.prepare('SELECT count(*) AS n FROM artifacts').get() as { n: number };
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
      expect(rt.store.db.prepare('SELECT count(*) AS n FROM artifacts').get()).toEqual({ n: 0 });
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

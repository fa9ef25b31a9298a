// The router host serves the host API as the Node host does (hosts/core/host-runtime.ts): credential
// references resolved at call time and scrubbed from outcomes, artifacts stored under the capture
// policy, recorded replay from the captured artifacts, approvers checked.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

const { RouterHost, FileJournalStore } = await import('../../dist/hosts/router/index.js');

function chain(id: string, middle: any[], requires: string[], outputs?: Record<string, unknown>): any {
  const nodes = [{ id: 'start', uses: 'core.start@1' }, ...middle, { id: 'end', uses: 'core.end@1' }];
  const edges = nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id }));
  return { apiVersion: 'workflow.gm-hz.dev/v1alpha1', kind: 'WorkflowTemplate', metadata: { id }, spec: { requires, nodes, edges, ...(outputs ? { outputs } : {}) } };
}

async function withHost(options: Record<string, unknown>, body: (host: any, dir: string) => Promise<void>): Promise<void> {
  const dir = tempDir('router-host-runtime-');
  const host = await RouterHost.open({ dir: path.join(dir, 'state'), profile: 'standalone', cadenceMs: 1, log: () => undefined, ...options });
  try {
    await body(host, dir);
  } finally {
    await host.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const completedOf = (events: any[]) => events.find((e) => e.type === 'capability.completed').payload;

describe('router credentials', () => {
  it('resolves a credential reference for an in-process tool and journals what the tool returns of it as [redacted]', async () => {
    const secret = 'sk-live-router-7731';
    const seen: unknown[] = [];
    const credentials = ({ credentialRef }: { credentialRef?: string }) => ({ credential: credentialRef === 'search-api' ? secret : undefined });
    const search = (input: unknown, ctx: { credential?: unknown }) => {
      seen.push(ctx.credential);
      return { authorised: ctx.credential === secret, echo: `token ${String(ctx.credential)}` };
    };
    await withHost({ tools: { search }, credentials }, async (host, dir) => {
      const t = chain('router-secret', [{ id: 'search', uses: 'tool.call@1', config: { tool: 'search', credentialRef: 'search-api' } }], ['tool:search'], { ok: { source: 'output', nodeId: 'search', path: '/authorised' } });
      const run = await host.launch(t, {});
      expect(await run.result).toMatchObject({ status: 'completed', output: { ok: true } });
      expect(seen).toEqual([secret]);
      expect(completedOf(host.events(run.runId)).output).toEqual({ authorised: true, echo: 'token [redacted]' });
      await host.stop();
      const journal = fs.readFileSync(path.join(dir, 'state', 'journal.log'));
      expect(journal.includes(secret)).toBe(false);
    });
  });

  it('fails the node with credential.unresolved when nothing resolves its reference, as the Node host does', async () => {
    let calls = 0;
    await withHost({ tools: { search: () => ++calls } }, async (host) => {
      const t = chain('router-no-resolver', [{ id: 'search', uses: 'tool.call@1', config: { tool: 'search', credentialRef: 'search-api' } }], ['tool:search']);
      const run = await host.launch(t, {});
      expect((await run.result).status).toBe('failed');
      expect(completedOf(host.events(run.runId)).error.code).toBe('credential.unresolved');
      expect(calls).toBe(0);
    });
  });
});

describe('router artifacts and the capture policy', () => {
  it('stores an output above the inline bound as an artifact and replays the run from it', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => ({ id: i, text: `row ${i} of a result` }));
    const template = chain(
      'router-big',
      [
        { id: 'fetch', uses: 'tool.call@1', config: { tool: 'fetch' } },
        { id: 'count', uses: 'core.script@1', config: { source: 'return input.data.rows.length' }, inputs: { data: { source: 'output', nodeId: 'fetch' } } },
      ],
      ['tool:fetch'],
      { count: { source: 'output', nodeId: 'count' } },
    );
    await withHost({ tools: { fetch: () => ({ rows }) }, capture: { inlineBytesMax: 1024 } }, async (host, dir) => {
      const run = await host.launch(template, {});
      expect(await run.result).toMatchObject({ status: 'completed', output: { count: 200 } });
      const payload = completedOf(host.events(run.runId));
      expect(payload.output).toBeUndefined();
      expect(payload.artifact).toMatchObject({ digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), mediaType: 'application/json', redacted: false, size: JSON.stringify({ rows }).length });
      const exported = host.exportRun(run.runId);
      expect(Object.keys(exported.artifacts)).toEqual([payload.artifact.digest]);
      expect(host.replay(run.runId, 'recorded')).toMatchObject({ identical: true });
      await host.stop();
      const store = FileJournalStore.open(path.join(dir, 'state'));
      try {
        expect(store.getArtifact(payload.artifact.digest)?.size).toBe(payload.artifact.size);
      } finally {
        store.close();
      }
    });
  });

  it('refuses a capture option it would not enforce', async () => {
    const dir = tempDir('router-capture-');
    // @ts-expect-error an option the router refuses at run time
    await expect(RouterHost.open({ dir, capture: { retentionDays: 7 }, log: () => undefined })).rejects.toMatchObject({ code: 'policy.unsupported' });
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('router approvals', () => {
  it('lets only a listed approver decide', async () => {
    const gated = chain('router-approvers', [{ id: 'gate', uses: 'human.approval@1', config: { prompt: 'go?', approvers: ['ops'] } }], ['approval']);
    await withHost({}, async (host) => {
      const run = await host.launch(gated, {});
      expect((await run.settled()).status).toBe('paused');
      expect(() => host.approve(run.runId, 'gate', { by: 'intern' })).toThrow(expect.objectContaining({ code: 'approval.not-allowed' }));
      await host.approve(run.runId, 'gate', { by: 'ops' });
      expect((await run.result).status).toBe('completed');
    });
  });
});

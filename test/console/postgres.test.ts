// The console's routes over a PostgreSQL store: `serve --http` with the store on the real server,
// the run list paged with its cursor, an approval from the inbox by the operator token and the
// read-only token refused.
import { describe, expect, it } from 'vitest';
import { pgUrl, testSchema } from '../helpers/postgres.js';
import { bearer, consoleWorld, gated, operatorToken, queue, quick, readonlyToken, runStatus, serveHttp, until } from './helpers.js';

const schema = testSchema('adw_console');

describe('the console over PostgreSQL', () => {
  it('pages runs, lists the inbox, refuses the read-only token and approves with the operator one', async () => {
    const w = consoleWorld();
    w.env.STORE = `${pgUrl}?schema=${schema}`;
    const served = await serveHttp(w);
    try {
      const done: string[] = [];
      for (let i = 0; i < 3; i++) done.push(await queue(w, 'quick', quick));
      for (const id of done) await until('the run to finish', async () => (await runStatus(served.base, id)).status === 'completed');
      const runId = await queue(w, 'gated', gated);
      await until('the approval to wait', async () => (await runStatus(served.base, runId)).pausedReason === 'approval');

      const get = async (path: string) => (await fetch(`${served.base}${path}`, { headers: bearer(readonlyToken) })).json();
      const all = (await get('/v1/console/runs')).runs.map((r: { runId: string }) => r.runId);
      expect(all).toHaveLength(4);
      expect(all[0]).toBe(runId);
      const first = await get('/v1/console/runs?limit=3');
      expect(first.runs.map((r: { runId: string }) => r.runId)).toEqual(all.slice(0, 3));
      const rest = await get(`/v1/console/runs?limit=3&cursor=${encodeURIComponent(first.nextCursor)}`);
      expect([rest.runs.map((r: { runId: string }) => r.runId), rest.nextCursor]).toEqual([all.slice(3), undefined]);
      expect((await get('/v1/console/runs?status=paused')).runs.map((r: { runId: string }) => r.runId)).toEqual([runId]);
      expect(await get('/v1/console/counts')).toEqual({ counts: { completed: 3, paused: 1 } });
      // The filters are answered by the store: template, what a run waits for, origin, search.
      const ids = async (query: string) => (await get(`/v1/console/runs?${query}`)).runs.map((r: { runId: string }) => r.runId);
      expect(await ids('template=gated')).toEqual([runId]);
      expect(await ids('template=quick')).toEqual(all.slice(1));
      expect(await ids('wait=approval')).toEqual([runId]);
      expect(await ids('wait=needs_attention')).toEqual([]);
      expect(await ids('origin=direct')).toEqual(all);
      expect(await ids('origin=trigger')).toEqual([]);
      expect(await ids('origin=binding:hook@1')).toEqual([]);
      expect(await ids(`q=${runId}`)).toEqual([runId]);
      expect((await get('/v1/console/runs?wait=later')).error.code).toBe('http.bad-request');
      expect((await get('/v1/console/runs?origin=somewhere')).error.code).toBe('http.bad-request');
      expect((await get('/v1/console/inbox')).items.map((i: { kind: string; runId: string; nodeId: string }) => [i.kind, i.runId, i.nodeId])).toEqual([['approval', runId, 'gate']]);

      const approve = (token: string) => fetch(`${served.base}/v1/console/runs/${runId}/approve`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify({ nodeId: 'gate', approved: true }) });
      const refused = await approve(readonlyToken);
      expect([refused.status, (await refused.json()).error.code]).toEqual([403, 'http.forbidden']);
      const approved = await approve(operatorToken);
      expect(approved.status).toBe(200);
      await until('the run to finish', async () => (await runStatus(served.base, runId)).status === 'completed');
    } finally {
      await served.stop();
    }
  }, 120_000);
});

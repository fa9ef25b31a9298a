// Read-only and operator tokens over real HTTP against `serve --http` on loopback: both read, only
// the operator acts; the server itself refuses a read-only token's action (403 http.forbidden)
// and the run stays as it was. Also the console's paged run list and its bad inputs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { aliceToken, bearer, bobToken, charge, consoleWorld, gated, jsonLines, operatorToken, queue, quick, readonlyToken, run, runStatus, serveHttp, until, type Served } from './helpers.js';

const w = consoleWorld();
let served: Served;

beforeAll(async () => {
  served = await serveHttp(w);
}, 60_000);

afterAll(async () => {
  await served?.stop();
});

async function call(path: string, token: string | undefined, init: { method?: string; body?: unknown } = {}) {
  const res = await fetch(`${served.base}${path}`, {
    method: init.method ?? 'GET',
    headers: { ...(token ? bearer(token) : {}), ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(init.body !== undefined ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) } : {}),
  });
  return { status: res.status, body: await res.json() };
}

describe('console access: read-only and operator tokens', () => {
  it('a read-only token reads but cannot approve or resolve; the operator token can', async () => {
    const runId = await queue(w, 'gated', gated);
    await until('the run to wait for its approval', async () => (await runStatus(served.base, runId)).pausedReason === 'approval');

    expect(await call('/v1/console/session', readonlyToken)).toEqual({ status: 200, body: { role: 'readonly', principal: 'readonly' } });
    expect(await call('/v1/console/session', operatorToken)).toEqual({ status: 200, body: { role: 'operator', principal: 'operator' } });
    expect(await call('/v1/console/session', aliceToken)).toEqual({ status: 200, body: { role: 'operator', principal: 'alice' } });
    for (const token of [undefined, 'wrong']) {
      for (const path of ['/v1/console/session', '/v1/console/runs', '/v1/console/inbox', '/v1/console/node-types', `/v1/runs/${runId}`]) {
        expect(await call(path, token)).toEqual({ status: 401, body: { error: { code: 'http.unauthorized', message: 'a valid bearer token is required' } } });
      }
    }

    // The node types the draft editor builds its forms from: each with its config schema.
    const types = await call('/v1/console/node-types', readonlyToken);
    expect(types.status).toBe(200);
    const approval = types.body.nodeTypes.find((t: { uses: string }) => t.uses === 'human.approval@1');
    expect(approval).toMatchObject({ uses: 'human.approval@1', configSchema: { type: 'object' } });
    expect(Object.keys(approval.configSchema.properties)).toContain('prompt');
    expect(types.body.nodeTypes.map((t: { uses: string }) => t.uses)).toContain('tool.call@1');

    const inbox = await call('/v1/console/inbox', readonlyToken);
    expect(inbox.status).toBe(200);
    expect(inbox.body.items).toEqual([
      {
        kind: 'approval',
        runId,
        nodeId: 'gate',
        since: expect.any(Number),
        prompt: 'Ship the release?',
        cli: { approve: `agent-workflow approve ${runId} gate --by '<you>'`, reject: `agent-workflow reject ${runId} gate --by '<you>' --comment '<why>'` },
      },
    ]);

    // The read-only token is refused by the server, before the body is even read.
    const approveBody = { nodeId: 'gate', approved: true, comment: 'looks good' };
    expect(await call(`/v1/console/runs/${runId}/approve`, readonlyToken, { method: 'POST', body: approveBody })).toEqual({
      status: 403,
      body: { error: { code: 'http.forbidden', message: 'a read-only token cannot approve: it needs the operator token' } },
    });
    expect(await call(`/v1/console/runs/${runId}/resolve`, readonlyToken, { method: 'POST', body: { nodeId: 'gate', resolution: 'retry' } })).toEqual({
      status: 403,
      body: { error: { code: 'http.forbidden', message: 'a read-only token cannot resolve: it needs the operator token' } },
    });
    expect(await runStatus(served.base, runId)).toMatchObject({ status: 'paused', pausedReason: 'approval' });

    // Bad requests of the operator are typed errors too.
    expect(await call(`/v1/console/runs/${runId}/approve`, operatorToken, { method: 'POST', body: '{not json' })).toEqual({ status: 400, body: { error: { code: 'http.bad-request', message: 'the body must be a JSON object' } } });
    expect(await call(`/v1/console/runs/${runId}/approve`, operatorToken, { method: 'POST', body: { nodeId: 'gate' } })).toEqual({ status: 400, body: { error: { code: 'http.bad-request', message: 'approved must be true or false' } } });
    expect((await call(`/v1/console/runs/${runId}/approve`, operatorToken)).status).toBe(405);
    expect((await call(`/v1/console/runs/nope/approve`, operatorToken, { method: 'POST', body: approveBody })).body.error.code).toBe('run.not-found');

    // Who decides is the token's principal; a `by` in the request is refused, never believed.
    expect(await call(`/v1/console/runs/${runId}/approve`, operatorToken, { method: 'POST', body: { ...approveBody, by: 'alice' } })).toEqual({
      status: 400,
      body: { error: { code: 'http.identity-argument', message: "by is not accepted: actions are recorded as the token's principal (operator)" } },
    });
    const approved = await call(`/v1/console/runs/${runId}/approve`, aliceToken, { method: 'POST', body: approveBody });
    expect(approved.status).toBe(200);
    expect(approved.body.applied).toBe(true);
    expect(approved.body.cli).toBe(`agent-workflow approve ${runId} gate --by alice --comment 'looks good'`);
    await until('the run to finish', async () => (await runStatus(served.base, runId)).status === 'completed');
    expect((await call('/v1/console/inbox', readonlyToken)).body.items).toEqual([]);

    // A decision on a run that has ended is refused with the engine's code.
    const again = await call(`/v1/console/runs/${runId}/approve`, operatorToken, { method: 'POST', body: approveBody });
    expect(again).toEqual({ status: 409, body: { error: { code: 'run.terminal', message: `run ${runId} is completed; there is nothing to approve` } } });
  }, 90_000);

  it('resolves a needs_attention node with the operator token', async () => {
    const runId = await queue(w, 'charge', charge);
    await until('the charge to need attention', async () => (await runStatus(served.base, runId)).pausedReason === 'needs_attention');
    const items = (await call('/v1/console/inbox', readonlyToken)).body.items;
    expect(items).toEqual([
      {
        kind: 'attention',
        runId,
        nodeId: 'charge',
        since: expect.any(Number),
        evidence: { kind: 'tool', name: 'hang', effect: 'unknown', requestedSeq: expect.any(Number), reason: 'timeout' },
        attentionSeq: expect.any(Number),
        cli: {
          succeeded: `agent-workflow resolve ${runId} charge --succeeded '<output json>' --attention-seq ${items[0].attentionSeq} --by '<you>'`,
          retry: `agent-workflow resolve ${runId} charge --retry --attention-seq ${items[0].attentionSeq} --by '<you>'`,
          fail: `agent-workflow resolve ${runId} charge --fail '<reason>' --attention-seq ${items[0].attentionSeq} --by '<you>'`,
        },
      },
    ]);
    // Naming an unknown that is not the node's (an older one) is refused by the engine.
    const stale = await call(`/v1/console/runs/${runId}/resolve`, operatorToken, { method: 'POST', body: { nodeId: 'charge', resolution: 'retry', attentionSeq: items[0].attentionSeq - 1 } });
    expect(stale.body.error?.code).toBe('resolve.stale');
    expect(await call(`/v1/console/runs/${runId}/resolve`, operatorToken, { method: 'POST', body: { nodeId: 'charge', resolution: 'maybe' } })).toEqual({
      status: 400,
      body: { error: { code: 'http.bad-request', message: 'resolution must be succeeded, retry or fail' } },
    });
    const resolved = await call(`/v1/console/runs/${runId}/resolve`, operatorToken, { method: 'POST', body: { nodeId: 'charge', resolution: 'succeeded', output: { charged: true }, attentionSeq: items[0].attentionSeq } });
    expect(resolved.status).toBe(200);
    expect(resolved.body.cli).toBe(`agent-workflow resolve ${runId} charge --succeeded '{"charged":true}' --attention-seq ${items[0].attentionSeq} --by operator`);
    await until('the run to finish', async () => (await runStatus(served.base, runId)).status === 'completed');
    expect(await runStatus(served.base, runId)).toMatchObject({ status: 'completed', output: { receipt: { charged: true } } });
  }, 90_000);

  it('lets only the approvers a node names decide it', async () => {
    const only = structuredClone(gated);
    only.metadata.id = 'gated-alice';
    only.spec.nodes[1].config.approvers = ['alice'];
    const runId = await queue(w, 'gated-alice', only);
    await until('the run to wait for its approval', async () => (await runStatus(served.base, runId)).pausedReason === 'approval');
    const item = (await call('/v1/console/inbox', readonlyToken)).body.items.find((i: { runId: string }) => i.runId === runId);
    expect(item.approvers).toEqual(['alice']);
    // Neither the shared operator token nor another person's may; naming alice in the body does not help.
    for (const token of [operatorToken, bobToken]) {
      const who = token === bobToken ? 'bob' : 'operator';
      expect(await call(`/v1/console/runs/${runId}/approve`, token, { method: 'POST', body: { nodeId: 'gate', approved: true } })).toEqual({
        status: 409,
        body: { error: { code: 'approval.not-allowed', message: `"${who}" may not decide gate of run ${runId}; its approvers are "alice"` } },
      });
    }
    expect((await call(`/v1/console/runs/${runId}/approve`, bobToken, { method: 'POST', body: { nodeId: 'gate', approved: true, by: 'alice' } })).body.error.code).toBe('http.identity-argument');
    const byAlice = await call(`/v1/console/runs/${runId}/approve`, aliceToken, { method: 'POST', body: { nodeId: 'gate', approved: false, comment: 'not now' } });
    expect([byAlice.status, byAlice.body.cli]).toEqual([200, `agent-workflow reject ${runId} gate --by alice --comment 'not now'`]);
    await until('the run to end', async () => ['completed', 'failed'].includes((await runStatus(served.base, runId)).status));
  }, 90_000);

  it('refuses to start with a missing or empty read-only token file, with the errors of the operator token file', async () => {
    writeFileSync(join(w.dir, 'empty.token'), '\n');
    const missing = await run(w, ['serve', '--http', '0', '--http-token-file', join(w.dir, 'operator.token'), '--http-readonly-token-file', join(w.dir, 'nope')]);
    expect({ code: missing.code, error: jsonLines(missing.stdout).at(-1)?.error }).toEqual({ code: 6, error: { code: 'http.token-file-not-found', message: `token file ${join(w.dir, 'nope')} does not exist` } });
    const empty = await run(w, ['serve', '--http', '0', '--http-token-file', join(w.dir, 'operator.token'), '--http-readonly-token-file', join(w.dir, 'empty.token')]);
    expect({ code: empty.code, error: jsonLines(empty.stdout).at(-1)?.error?.code }).toEqual({ code: 2, error: 'http.bad-token-file' });
    // An operators file with a short token, a reserved name or a token two people share is refused, naming the line.
    for (const [text, said] of [
      ['alice short\n', 'line 1: the token of alice is shorter than 16 characters'],
      ['operator 0123456789abcdef0\n', 'line 1: the name operator is reserved'],
      ['alice 0123456789abcdef0\nbob 0123456789abcdef0\n', "line 2: the token of bob is another operator's too"],
    ]) {
      writeFileSync(join(w.dir, 'bad-operators'), text);
      const bad = await run(w, ['serve', '--http', '0', '--http-token-file', join(w.dir, 'operator.token'), '--http-operators-file', join(w.dir, 'bad-operators')]);
      expect({ code: bad.code, error: jsonLines(bad.stdout).at(-1)?.error }).toEqual({ code: 2, error: { code: 'http.bad-token-file', message: `operators file ${join(w.dir, 'bad-operators')}: ${said}` } });
    }
  }, 60_000);

  it('pages the run list with a cursor and filters it by status, time and run id', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await queue(w, 'quick', quick));
    for (const id of ids) await until('the run to finish', async () => (await runStatus(served.base, id)).status === 'completed');
    const all = (await call('/v1/console/runs?limit=200', readonlyToken)).body.runs.map((r: { runId: string }) => r.runId);
    expect(all.length).toBeGreaterThanOrEqual(5);
    const first = await call('/v1/console/runs?limit=2', readonlyToken);
    expect(first.body.runs.map((r: { runId: string }) => r.runId)).toEqual(all.slice(0, 2));
    expect(first.body.nextCursor).toBe(`${first.body.runs[1].createdAt}:${first.body.runs[1].runId}`);
    const second = await call(`/v1/console/runs?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`, readonlyToken);
    expect(second.body.runs.map((r: { runId: string }) => r.runId)).toEqual(all.slice(2, 4));
    const last = await call(`/v1/console/runs?limit=200&cursor=${encodeURIComponent(first.body.nextCursor)}`, readonlyToken);
    expect(last.body.nextCursor).toBeUndefined();
    expect(last.body.runs.map((r: { runId: string }) => r.runId)).toEqual(all.slice(2));

    const row = first.body.runs[0];
    expect(Object.keys(row).sort()).toEqual(['createdAt', 'lastSeq', 'runId', 'status', 'updatedAt', 'waiting']);
    expect((await call(`/v1/console/runs?q=${encodeURIComponent(ids[1])}`, readonlyToken)).body.runs.map((r: { runId: string }) => r.runId)).toEqual([ids[1]]);
    expect((await call('/v1/console/runs?status=cancelled', readonlyToken)).body).toEqual({ runs: [] });
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await call(`/v1/console/runs?from=${future}`, readonlyToken)).body).toEqual({ runs: [] });
    expect((await call(`/v1/console/runs?to=${future}&limit=200`, readonlyToken)).body.runs.length).toBe(all.length);
    for (const q of ['cursor=nope', 'from=yesterday', 'limit=201', 'limit=-1']) {
      expect((await call(`/v1/console/runs?${q}`, readonlyToken)).body.error.code).toBe('http.bad-request');
    }
  }, 90_000);
});

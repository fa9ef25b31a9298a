// Triggers and deliveries in the console, in Chromium against a real `serve --http` over SQLite: a
// webhook event is followed from its ingress record to the run it started (its duplicate names
// the same run, a badly signed one is rejected with its reason), the runs list finds that run by
// the event's id, its binding and its template, and a delivery that its target
// refuses is dead, listed with its error, and retried by the operator (a read-only token is
// refused by the server).
import { createHash } from 'node:crypto';
import { allowDeliveryTarget } from '../helpers/delivery-allow.js';
import { createServer, type Server as HttpServer } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, root, watchPage } from '../browser/page-driver.js';
import { echo, postHook, publishBinding, publishTemplate, serve, until, world, type Server } from '../triggers/helpers.js';
import { bearer, operatorToken, readonlyToken } from './helpers.js';
import { writeFileSync } from 'node:fs';

const shots = join(root, 'docs', 'console');
const w = world({ HOOK_SECRET: 'hook-secret' });
let server: Server;
let browser: Browser;
let refusing: HttpServer;

beforeAll(async () => {
  // A delivery target that refuses everything: its deliveries end dead.
  refusing = createServer((_req, res) => res.writeHead(503).end('down for maintenance'));
  await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
  const port = (refusing.address() as AddressInfo).port;
  const target = `http://127.0.0.1:${port}/results`;
  // A loopback target is refused unless the deployment allows it (docs/triggers.md).
  allowDeliveryTarget(`127.0.0.1:${port}`);
  await publishTemplate(w, echo);
  await publishBinding(w, { id: 'hook', source: 'webhook', config: { secretRef: 'HOOK_SECRET' }, target: 'echo@1', input: { text: { pointer: '/body/text' } }, delivery: { kind: 'webhook', url: target } });
  writeFileSync(join(w.dir, 'operator.token'), operatorToken);
  writeFileSync(join(w.dir, 'readonly.token'), readonlyToken);
  server = await serve(w, {}, ['--http-token-file', join(w.dir, 'operator.token'), '--http-readonly-token-file', join(w.dir, 'readonly.token'), '--delivery-attempts', '1', '--delivery-backoff-ms', '1']);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await new Promise((r) => refusing?.close(r));
});

async function get(path: string, token = readonlyToken) {
  return (await fetch(`${server.url}${path}`, { headers: bearer(token) })).json();
}

describe('triggers and deliveries in the console', () => {
  it('follows a webhook event from its ingress record to its run, and lists its dead delivery', async () => {
    const body = JSON.stringify({ text: 'hello from the hook' });
    const first = await postHook(server.url, 'hook', body, { secret: 'hook-secret', eventId: 'evt-1' });
    expect(first.status).toBe(202);
    const runId = first.body.runId as string;
    expect(await postHook(server.url, 'hook', body, { secret: 'hook-secret', eventId: 'evt-1' })).toEqual({ status: 202, body: { runId, deduplicated: true } });
    const forged = await postHook(server.url, 'hook', body, { secret: 'not-the-secret', eventId: 'evt-2' });
    expect(forged.status).toBe(401);
    await until('the run to finish', async () => (await get(`/v1/runs/${runId}`)).status === 'completed');
    const dead = await until('its delivery to be dead', async () => (await get('/v1/console/deliveries?state=dead')).deliveries[0]);
    expect(dead).toMatchObject({ runId, phase: 'ended', state: 'dead', attempts: 1, lastStatusCode: 503 });

    const ingress = await get('/v1/console/ingress');
    // The original signing scheme leaves the id header unsigned: the event is the body's digest.
    const event = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    expect(ingress.records.map((r: any) => [r.status, r.sourceEventId, r.runId, r.reasonCode])).toEqual([
      ['launched', event, runId, undefined],
      ['deduplicated', event, runId, undefined],
      ['rejected', 'evt-2', undefined, forged.body.error.code],
    ]);
    expect(ingress.nextAfter).toBeUndefined();
    const paged = await get('/v1/console/ingress?limit=2');
    expect([paged.records.length, paged.nextAfter]).toEqual([2, ingress.records[1].id]);
    expect((await get(`/v1/console/ingress?after=${paged.nextAfter}`)).records).toEqual([ingress.records[2]]);
    expect((await get('/v1/console/ingress?status=odd')).error.code).toBe('http.bad-request');

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems = watchPage(page);
    try {
      await page.goto(`${server.url}/console/?view=triggers#token=${operatorToken}`);
      await page.waitForFunction(() => document.body.dataset.ready === 'idle', undefined, { timeout: 30_000 });
      expect(await page.$$eval('#bindings tbody tr', (trs) => trs.map((tr) => [...tr.children].slice(0, 4).map((td) => td.textContent)))).toEqual([['hook@1', 'webhook', 'published', 'echo@1']]);
      expect(await page.$$eval('#ingress tbody tr', (trs) => trs.map((tr) => [tr.getAttribute('data-status'), tr.querySelector('td.run')!.textContent]))).toEqual([
        ['rejected', '—'],
        ['deduplicated', runId],
        ['launched', runId],
      ]);
      expect(await page.textContent('#ingress tbody tr[data-status=rejected] td.reason')).toBe(`${forged.body.error.code}: ${forged.body.error.message}`);
      expect(await page.$$eval('#deliveries tbody tr', (trs) => trs.map((tr) => [tr.getAttribute('data-state'), tr.children[4].textContent, tr.children[5].textContent]))).toEqual([['dead', '1', expect.stringMatching(/^503 /)]]);
      await page.screenshot({ path: join(shots, 'triggers.png'), fullPage: true });

      // From the duplicate's record to the run the first event started.
      await page.click('#ingress tbody tr[data-status=deduplicated] td.run a');
      await page.waitForFunction(() => document.querySelector('#run-status')?.textContent === 'completed' && document.body.dataset.ready === '1', undefined, { timeout: 30_000 });
      expect(new URL(page.url()).searchParams.get('run')).toBe(runId);
      expect(await page.textContent('#run-id')).toContain(runId);

      // The runs list finds the run by the event's id, and by its binding and template.
      await page.goto(`${server.url}/console/`);
      await page.waitForFunction(() => document.body.dataset.ready === 'idle', undefined, { timeout: 30_000 });
      const listed = async (fill: Record<string, string>, info: string) => {
        for (const [sel, value] of Object.entries(fill)) await (sel === '#f-origin' ? page.selectOption(sel, value) : page.fill(sel, value));
        await page.click('#filters button[type=submit]');
        await page.waitForFunction((text) => document.querySelector('#page-info')?.textContent === text && document.body.dataset.ready === 'idle', info, { timeout: 30_000 });
        return page.$$eval('#runs tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-run')));
      };
      expect(await listed({ '#f-search': event }, 'page 1 · 1 runs · last page')).toEqual([runId]);
      expect(await listed({ '#f-search': '', '#f-binding': 'hook@1', '#f-template': 'echo@1' }, 'page 1 · 1 runs · last page')).toEqual([runId]);
      expect(await listed({ '#f-binding': 'hook@2' }, 'no runs match')).toEqual([]);
      expect(await listed({ '#f-binding': '', '#f-template': '', '#f-origin': 'direct' }, 'no runs match')).toEqual([]);
      expect(await listed({ '#f-origin': 'trigger' }, 'page 1 · 1 runs · last page')).toEqual([runId]);
      expect(problems.filter((p) => !/^requestfailed: \S+\/events net::ERR_ABORTED$/.test(p))).toEqual([]);
    } finally {
      await page.close();
    }

    // Retrying the dead delivery: refused to the read-only token by the server, done for the operator.
    const retry = (token: string) => fetch(`${server.url}/v1/console/deliveries/${encodeURIComponent(dead.id)}/retry`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: '{}' });
    const refused = await retry(readonlyToken);
    expect([refused.status, await refused.json()]).toEqual([403, { error: { code: 'http.forbidden', message: 'a read-only token cannot retry a delivery: it needs the operator token' } }]);
    const retried = await retry(operatorToken);
    const answer = await retried.json();
    expect([retried.status, answer.applied, answer.cli, answer.outcome.id]).toEqual([200, true, `agent-workflow deliveries retry ${dead.id}`, dead.id]);
  }, 120_000);
});

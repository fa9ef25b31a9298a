// The console in Chromium against a real `serve --http` on loopback over a real SQLite store with
// 10,000 runs: the run list reads one page at a time from the server (limit and cursor), the
// inbox approves a run and resolves a needs_attention node and shows each run finish live, a
// read-only token gets no action buttons, and a run opens on its page. The screenshots of
// docs/console.md are taken here.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, root, watchPage } from '../browser/page-driver.js';
import { aliceToken, charge, consoleWorld, gated, jsonLines, operatorToken, queue, quick, readonlyToken, run, runStatus, serveHttp, until, writeTemplate, type Served } from './helpers.js';

const shots = join(root, 'docs', 'console');
const runsInStore = 10_000;
const w = consoleWorld();
let served: Served;
let browser: Browser;
let firstRun: string;

/**
 * Copies of one real run's rows (run and events) under new ids, one second apart and older than
 * it, so the store holds `count` runs without running them one by one.
 */
function seedCopies(dbFile: string, of: string, count: number): void {
  const db = new Database(dbFile);
  try {
    const columns = (db.prepare('PRAGMA table_info(runs)').all() as { name: string }[]).map((c) => c.name);
    const runValues = columns.map((c) => (c === 'run_id' ? `'seed-' || printf('%05d', n)` : c === 'created_at' || c === 'updated_at' ? `${c} - n * 1000` : c)).join(', ');
    const eventColumns = (db.prepare('PRAGMA table_info(events)').all() as { name: string }[]).map((c) => c.name).filter((c) => c !== 'id');
    const eventValues = eventColumns.map((c) => (c === 'run_id' ? `'seed-' || printf('%05d', n)` : c)).join(', ');
    const numbers = `WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < ${count})`;
    db.transaction(() => {
      db.prepare(`INSERT INTO runs (${columns.join(', ')}) ${numbers} SELECT ${runValues} FROM runs, k WHERE run_id = ?`).run(of);
      db.prepare(`INSERT INTO events (${eventColumns.join(', ')}) ${numbers} SELECT ${eventValues} FROM events, k WHERE run_id = ?`).run(of);
    })();
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  const done = await run(w, ['run', writeTemplate(w, 'quick', quick), '--input', '{}']);
  expect(done.code).toBe(0);
  firstRun = jsonLines(done.stdout).at(-1).runId;
  seedCopies(join(w.state, 'workflow.db'), firstRun, runsInStore - 1);
  served = await serveHttp(w);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await served?.stop();
});

async function rowIds(page: Page): Promise<string[]> {
  return page.$$eval('#runs tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-run')!));
}

describe('the console in Chromium', () => {
  it('lists 10,000 runs a page at a time from the server, filters them, and opens a run', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems = watchPage(page);
    const listRequests: URL[] = [];
    page.on('request', (r) => {
      const url = new URL(r.url());
      if (url.pathname === '/v1/console/runs') listRequests.push(url);
    });
    try {
      await page.goto(`${served.base}/console/#token=${operatorToken}`);
      await page.waitForFunction(() => document.body.dataset.ready === 'idle' && document.querySelectorAll('#runs tbody tr').length > 0, undefined, { timeout: 30_000 });
      // The token left the address bar; the list came from the server as one page.
      expect(new URL(page.url()).hash).toBe('');
      expect(listRequests.map((u) => Object.fromEntries(u.searchParams))).toEqual([{ limit: '50' }]);
      const first = await rowIds(page);
      expect(first).toHaveLength(50);
      expect(first[0]).toBe(firstRun);
      expect(first.slice(1)).toEqual(Array.from({ length: 49 }, (_, i) => `seed-${String(i + 1).padStart(5, '0')}`));
      expect(await page.textContent('#page-info')).toBe('page 1 · 50 runs');
      expect(await page.textContent('#role')).toBe('operator: operator');
      await page.waitForSelector('#counts span[data-status=completed]');
      expect(await page.$$eval('#counts span', (ss) => ss.map((e) => e.textContent))).toEqual(['completed 10,000']);
      await page.screenshot({ path: join(shots, 'runs.png') });

      // Export: the run's self-contained export, fetched with the token and saved as <run id>.json.
      const [download] = await Promise.all([page.waitForEvent('download'), page.click(`#runs tbody tr[data-run="${firstRun}"] button`)]);
      expect(download.suggestedFilename()).toBe(`${firstRun}.json`);
      const saved = JSON.parse(readFileSync((await download.path())!, 'utf8'));
      const exported = await (await fetch(`${served.base}/v1/runs/${firstRun}/export`, { headers: { authorization: `Bearer ${readonlyToken}` } })).json();
      expect(saved).toEqual(exported);

      await page.click('#next-page');
      await page.waitForFunction(() => document.querySelector('#page-info')?.textContent === 'page 2 · 50 runs' && document.body.dataset.ready === 'idle', undefined, { timeout: 30_000 });
      expect(Object.fromEntries(listRequests.at(-1)!.searchParams)).toEqual({ limit: '50', cursor: `${await cursorOf(first.at(-1)!)}` });
      expect(await rowIds(page)).toEqual(Array.from({ length: 50 }, (_, i) => `seed-${String(i + 50).padStart(5, '0')}`));
      expect(await page.locator('#runs tbody tr').count()).toBe(50);

      // Search by run id (a prefix) and filter by status: the server answers, the page shows it.
      await page.fill('#f-search', 'seed-0999');
      await page.click('#filters button[type=submit]');
      await page.waitForFunction(() => document.querySelector('#page-info')?.textContent === 'page 1 · 10 runs · last page', undefined, { timeout: 30_000 });
      expect(Object.fromEntries(listRequests.at(-1)!.searchParams)).toEqual({ limit: '50', q: 'seed-0999' });
      expect(await rowIds(page)).toEqual(Array.from({ length: 10 }, (_, i) => `seed-0999${i}`));
      await page.fill('#f-search', '');
      await page.selectOption('#f-status', 'failed');
      await page.click('#filters button[type=submit]');
      await page.waitForFunction(() => document.querySelector('#page-info')?.textContent === 'no runs match', undefined, { timeout: 30_000 });
      expect(Object.fromEntries(listRequests.at(-1)!.searchParams)).toEqual({ limit: '50', status: 'failed' });

      // A run's link opens the run page: the graph, the timeline and the node panel of the replay page.
      await page.selectOption('#f-status', '');
      await page.click('#filters button[type=submit]');
      await page.waitForFunction(() => document.querySelector('#page-info')?.textContent === 'page 1 · 50 runs', undefined, { timeout: 30_000 });
      await page.click(`#runs tbody tr[data-run="${firstRun}"] a`);
      await page.waitForFunction(() => document.querySelector('#run-status')?.textContent === 'completed' && document.body.dataset.ready === '1', undefined, { timeout: 30_000 });
      expect(await page.$$eval('#dag g.node', (gs) => gs.map((g) => [g.getAttribute('data-node'), g.getAttribute('data-status')]))).toEqual([
        ['start', 'completed'],
        ['say', 'completed'],
        ['end', 'completed'],
      ]);
      // The journal opens on what the run did; the infrastructure is one choice away.
      const types = () => page.$$eval('#timeline tbody tr', (trs) => trs.map((tr) => tr.children[2]?.textContent ?? ''));
      expect(await page.inputValue('#timeline-filter')).toBe('business');
      const business = await types();
      expect(business.length).toBeGreaterThan(0);
      expect(business.filter((t) => !/^(run|node)\./.test(t))).toEqual([]);
      expect(business).toContain('run.completed');
      await page.screenshot({ path: join(shots, 'run.png') });
      await page.selectOption('#timeline-filter', 'all');
      const all = await types();
      expect(all).toContain('edge.taken');
      expect(all).toContain('capability.completed');
      expect(all.filter((t) => /^(run|node)\./.test(t))).toEqual(business);
      expect(problems.filter((p) => !/^requestfailed: \S+\/events net::ERR_ABORTED$/.test(p))).toEqual([]);
    } finally {
      await page.close();
    }
  }, 120_000);

  it('approves a run and resolves a needs_attention node from the inbox, and shows each run finish live', async () => {
    const approvalRun = await queue(w, 'gated', gated);
    const chargeRun = await queue(w, 'charge', charge);
    await until('the approval to wait', async () => (await runStatus(served.base, approvalRun)).pausedReason === 'approval');
    await until('the charge to need attention', async () => (await runStatus(served.base, chargeRun)).pausedReason === 'needs_attention');
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems = watchPage(page);
    try {
      // Alice's own token: the page says who acts, and the server records her.
      await page.goto(`${served.base}/console/?view=inbox#token=${aliceToken}`);
      await page.waitForFunction(() => document.body.dataset.ready === 'idle', undefined, { timeout: 30_000 });
      expect(await page.textContent('#acting-as')).toBe('alice');
      const approval = page.locator(`section.item[data-run="${approvalRun}"]`);
      const attention = page.locator(`section.item[data-run="${chargeRun}"]`);
      expect(await page.$$eval('section.item', (s) => s.map((e) => [e.getAttribute('data-kind'), e.getAttribute('data-node')]))).toEqual([
        ['attention', 'charge'],
        ['approval', 'gate'],
      ]);
      expect(await approval.locator('.prompt').textContent()).toBe('Ship the release?');
      expect(await approval.locator('.cli').textContent()).toBe(`agent-workflow approve ${approvalRun} gate --by '<you>'\nagent-workflow reject ${approvalRun} gate --by '<you>' --comment '<why>'`);
      await page.waitForFunction(() => document.querySelector('#inbox-count')?.textContent === '2', undefined, { timeout: 30_000 });
      const evidence = JSON.parse((await attention.locator('pre.evidence').textContent())!);
      expect(evidence).toEqual({ kind: 'tool', name: 'hang', effect: 'unknown', requestedSeq: expect.any(Number), reason: 'timeout' });
      await page.screenshot({ path: join(shots, 'inbox.png') });

      await approval.locator('textarea.comment').fill('ship it');
      await approval.locator('button[data-action=approve]').click();
      // The action's answer (which sets the command line) and the run's end on its stream come in either order.
      await approval.locator('.result[data-kind=ok]').waitFor({ timeout: 30_000 });
      await approval.locator('.live[data-status=completed]').waitFor({ timeout: 30_000 });
      expect(await approval.locator('.cli').textContent()).toBe(`agent-workflow approve ${approvalRun} gate --by alice --comment 'ship it'`);
      // The run's end came over its event stream (the item saw run.completed arrive).
      await approval.locator('.live[data-ended-by="run.completed"]').waitFor({ timeout: 30_000 });
      expect(await approval.locator('.result').getAttribute('data-kind')).toBe('ok');

      await attention.locator('textarea.output').fill('{"charged":true}');
      await attention.locator('button[data-action=succeeded]').click();
      // The action's answer (which sets the command line) and the run's end on its stream come in either order.
      await attention.locator('.result[data-kind=ok]').waitFor({ timeout: 30_000 });
      await attention.locator('.live[data-status=completed]').waitFor({ timeout: 30_000 });
      expect(await attention.locator('.cli').textContent()).toMatch(new RegExp(`^agent-workflow resolve ${chargeRun} charge --succeeded '\\{"charged":true\\}' --attention-seq [1-9][0-9]* --by alice$`));
      await attention.locator('.live[data-ended-by="run.completed"]').waitFor({ timeout: 30_000 });
      await page.screenshot({ path: join(shots, 'inbox-done.png') });

      expect(await runStatus(served.base, approvalRun)).toMatchObject({ status: 'completed' });
      expect(await runStatus(served.base, chargeRun)).toMatchObject({ status: 'completed', output: { receipt: { charged: true } } });
      expect(problems.filter((p) => !/^requestfailed: \S+\/events net::ERR_ABORTED$/.test(p))).toEqual([]);
    } finally {
      await page.close();
    }
  }, 120_000);

  it('gives a read-only token no actions (and the server refuses them anyway)', async () => {
    const waiting = await queue(w, 'gated', gated);
    await until('the approval to wait', async () => (await runStatus(served.base, waiting)).pausedReason === 'approval');
    const page = await browser.newPage({ viewport: { width: 1280, height: 600 } });
    const problems = watchPage(page);
    try {
      await page.goto(`${served.base}/console/?view=inbox#token=${readonlyToken}`);
      await page.waitForFunction(() => document.body.dataset.ready === 'idle', undefined, { timeout: 30_000 });
      expect(await page.textContent('#role')).toBe('read-only token');
      const item = page.locator(`section.item[data-run="${waiting}"]`);
      expect(await item.locator('button').evaluateAll((bs) => bs.map((b) => [b.textContent, (b as HTMLButtonElement).disabled]))).toEqual([
        ['Approve', true],
        ['Reject', true],
      ]);
      // Even a request made by hand from the page with this token is refused by the server.
      const answer = await page.evaluate(async (runId) => {
        const token = sessionStorage.getItem('agent-workflow.console.token');
        const res = await fetch(`/v1/console/runs/${runId}/approve`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ nodeId: 'gate', approved: true }) });
        return { status: res.status, body: await res.json() };
      }, waiting);
      expect(answer).toEqual({ status: 403, body: { error: { code: 'http.forbidden', message: 'a read-only token cannot approve: it needs the operator token' } } });
      expect(await runStatus(served.base, waiting)).toMatchObject({ status: 'paused', pausedReason: 'approval' });
      await page.screenshot({ path: join(shots, 'inbox-readonly.png') });
      expect(problems.filter((p) => !/403/.test(p))).toEqual([]);
    } finally {
      await page.close();
    }
  }, 120_000);
});

async function cursorOf(runId: string): Promise<string> {
  const res = await fetch(`${served.base}/v1/console/runs?q=${encodeURIComponent(runId)}&limit=1`, { headers: { authorization: `Bearer ${readonlyToken}` } });
  const row = (await res.json()).runs[0];
  return `${row.createdAt}:${row.runId}`;
}

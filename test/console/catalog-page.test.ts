// The catalog and the draft editor in Chromium against a real `serve --http` over SQLite: two
// published revisions and their semantic diff, the engine's validation errors shown at their
// JSON pointers while the draft is edited, a compare-and-set save and a publish from the page,
// and a run of the new revision. A read-only token cannot save (the server refuses it).
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, root, watchPage } from '../browser/page-driver.js';
import { bearer, consoleWorld, jsonLines, operatorToken, quick, readonlyToken, run, runStatus, serveHttp, until, writeTemplate, type Served } from './helpers.js';

const shots = join(root, 'docs', 'console');
const w = consoleWorld();
let served: Served;
let browser: Browser;

async function cli(args: string[]): Promise<any> {
  const r = await run(w, args);
  if (r.code !== 0) throw new Error(`agent-workflow ${args.join(' ')} exited ${r.code}: ${r.stdout}${r.stderr}`);
  return jsonLines(r.stdout).at(-1);
}

const second = structuredClone(quick);
second.spec.nodes[1].timeoutMs = 5000;

beforeAll(async () => {
  await cli(['draft', 'put', writeTemplate(w, 'quick-1', quick)]);
  await cli(['publish', 'quick', '--expected', '1']);
  await cli(['draft', 'put', writeTemplate(w, 'quick-2', second), '--expected', '1']);
  await cli(['publish', 'quick', '--expected', '2']);
  served = await serveHttp(w);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await served?.stop();
});

async function post(path: string, token: string, body: unknown) {
  const res = await fetch(`${served.base}${path}`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

describe('the catalog and the draft editor', () => {
  it('diffs revisions, validates a draft live, edits a node in its form, saves it with compare-and-set, publishes it, and the revision runs', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
    const problems = watchPage(page);
    try {
      await page.goto(`${served.base}/console/?view=catalog#token=${operatorToken}`);
      await page.waitForFunction(() => document.body.dataset.ready === 'idle', undefined, { timeout: 30_000 });
      expect(await page.$$eval('#workflows tbody tr', (trs) => trs.map((tr) => [...tr.children].slice(0, 4).map((td) => td.textContent)))).toEqual([['quick', '', '@1 @2', 'draft 2']]);
      await page.click('#workflows a');
      await page.waitForFunction(() => document.body.dataset.ready === 'idle' && document.querySelector('#validation')?.getAttribute('data-state') === 'valid', undefined, { timeout: 30_000 });
      expect(await page.$$eval('#revisions tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-revision')))).toEqual(['1', '2']);
      expect(await page.textContent('#draft-info')).toBe('draft revision 2');

      await page.click('#compare');
      await page.waitForSelector('#diff[data-ready=true]');
      expect(await page.$$eval('#diff li', (lis) => lis.map((li) => [li.getAttribute('data-op'), li.getAttribute('data-pointer')]))).toEqual([['add', '/spec/nodes/1/timeoutMs']]);

      // An edit the engine refuses: its own errors, at their pointers.
      const broken = structuredClone(second);
      broken.spec.nodes[1].uses = 'tool.nope@1';
      broken.spec.nodes[1].timeoutMs = 6000;
      await page.fill('#draft-json', JSON.stringify(broken, null, 2));
      await page.waitForSelector('#validation[data-state=invalid]', { timeout: 30_000 });
      const engine = await post('/v1/console/validate', readonlyToken, { template: broken });
      expect(engine.body.ok).toBe(false);
      expect(await page.$$eval('#validation li', (lis) => lis.map((li) => [li.getAttribute('data-pointer'), li.getAttribute('data-code')]))).toEqual(engine.body.errors.map((e: any) => [e.pointer, e.code]));
      expect(engine.body.errors.map((e: any) => e.pointer)).toContain('/spec/nodes/1/uses');
      await page.screenshot({ path: join(shots, 'catalog.png'), fullPage: true });

      const fixed = structuredClone(second);
      fixed.spec.nodes[1].timeoutMs = 6000;
      // The node form: generated from tool.call@1's config schema; its edit changes only that
      // value's bytes in the JSON, and the engine validates the result live.
      const other = structuredClone(fixed);
      other.spec.nodes[1].config.tool = 'undeclared';
      await page.fill('#draft-json', JSON.stringify(other, null, 2));
      await page.waitForSelector('#validation[data-state=invalid]', { timeout: 30_000 });
      await page.selectOption('#node-pick', 'say');
      await page.fill('#node-fields input[data-key=tool]', 'echo');
      await page.dispatchEvent('#node-fields input[data-key=tool]', 'change');
      expect(await page.inputValue('#draft-json')).toBe(JSON.stringify(fixed, null, 2));
      await page.waitForSelector('#validation[data-state=valid]', { timeout: 30_000 });

      // Edges on the graph: clicking an edge takes its bytes out of the JSON (the engine then
      // finds the end unreachable); clicking one node, then another, draws it back.
      const unlinked = structuredClone(fixed);
      unlinked.spec.edges = unlinked.spec.edges.filter((e: { from: string; to: string }) => !(e.from === 'say' && e.to === 'end'));
      await page.click('#draft-graph .edge[data-from=say][data-to=end]');
      expect(await page.inputValue('#draft-json')).toBe(JSON.stringify(unlinked, null, 2));
      await page.waitForSelector('#validation[data-state=invalid]', { timeout: 30_000 });
      await page.click('#draft-graph g[data-node=say]');
      await page.click('#draft-graph g[data-node=end]');
      const drawn = await page.inputValue('#draft-json');
      expect(JSON.parse(drawn)).toEqual(fixed);
      // Every other byte where it was: the new edge is one inserted line after the last one.
      expect(drawn.replace(',\n      {"from":"say","to":"end"}', '')).toBe(JSON.stringify(unlinked, null, 2));
      expect(await page.$$eval('#draft-graph .edge', (ls) => ls.map((l) => `${l.getAttribute('data-from')}>${l.getAttribute('data-to')}`))).toEqual(['start>say', 'say>end']);
      await page.waitForSelector('#validation[data-state=valid]', { timeout: 30_000 });
      await page.click('#save');
      await page.waitForSelector('#draft-result[data-kind=ok]', { timeout: 30_000 });
      expect(await page.textContent('#draft-result')).toBe('saved as draft revision 3');

      // Someone else's save meanwhile: the page's next save is refused (compare-and-set).
      expect(await post('/v1/console/catalog/quick/draft', operatorToken, { template: fixed, expectedDraftRevision: 2 })).toEqual({
        status: 409,
        body: { error: { code: 'catalog.draft-conflict', message: 'draft quick is at draft revision 3, not 2; read it again and retry' } },
      });
      expect(await post('/v1/console/catalog/quick/draft', readonlyToken, { template: fixed, expectedDraftRevision: 3 })).toEqual({
        status: 403,
        body: { error: { code: 'http.forbidden', message: 'a read-only token cannot save a draft: it needs the operator token' } },
      });

      await page.click('#publish');
      await page.waitForFunction(() => document.querySelector('#draft-result')?.textContent === 'published quick@3', undefined, { timeout: 30_000 });
      // The JSON is the only model: the published template is the edited one, key order and all.
      const revision = await cli(['describe', 'quick@3', '--view', 'template']);
      expect(JSON.stringify(revision.template)).toBe(JSON.stringify(fixed));
      const queued = await cli(['run', 'quick@3', '--no-wait', '--input', '{}']);
      await until('the new revision to run', async () => (await runStatus(served.base, queued.runId)).status === 'completed');
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 120_000);
});

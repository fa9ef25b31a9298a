// The replay page follows a live run in Chromium: served by the HTTP API of the process that runs
// the run, opened on the run while its first tool call is held, it shows the graph and journal
// growing as events commit, and switches to replay (inspect) when the run ends.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpApi, type HttpApi } from '../../dist/hosts/node/observe/http-api.js';
import type { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, openRuntime } from '../helpers/node-host.js';
import { drawnStates, launchChromium, watchPage } from './page-driver.js';

/** A tool call that returns when the test opens its gate. */
function gates() {
  const open = new Map<string, () => void>();
  const waiting = new Map<string, Promise<void>>();
  const gate = (name: string) => {
    if (!waiting.has(name)) waiting.set(name, new Promise<void>((r) => open.set(name, r)));
    return waiting.get(name)!;
  };
  return { gate, open: (name: string) => (gate(name), open.get(name)!()) };
}

let browser: Browser;
let rt: WorkflowRuntime;
let api: HttpApi;
const g = gates();

beforeAll(async () => {
  browser = await launchChromium();
  rt = await openRuntime({ tools: { hold: async (input: { gate: string }) => (await g.gate(input.gate), { passed: input.gate }) } });
  api = await startHttpApi(rt, { port: 0, insecureNoAuth: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
  await rt?.close();
});

async function rows(page: Page): Promise<string[]> {
  return page.$$eval('#timeline tbody tr', (trs) => trs.map((tr) => tr.children[2]?.textContent ?? ''));
}

describe('browser page: a live run', () => {
  it('draws events as they commit and switches to replay when the run ends', async () => {
    const t = chain('live-page', [
      { id: 'first', uses: 'tool.call@1', config: { tool: 'hold' }, inputs: { gate: { source: 'input', path: '/a' } } },
      { id: 'second', uses: 'tool.call@1', config: { tool: 'hold' }, inputs: { gate: { source: 'input', path: '/b' } } },
    ]);
    t.spec.requires = ['tool:hold'];
    const handle = await rt.launch(t, { input: { a: 'a', b: 'b' } });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const problems = watchPage(page);
    try {
      await page.goto(`${api.url}/page/?run=${encodeURIComponent(handle.runId)}`);
      await page.waitForSelector('body[data-live=following]', { timeout: 30_000 });
      await page.waitForFunction(() => document.querySelector('#dag g.node[data-node=first]')?.getAttribute('data-status') === 'running', undefined, { timeout: 30_000 });
      expect((await drawnStates(page)).second).toBe('pending');
      expect(await page.locator('#replay-recorded').isDisabled()).toBe(true);
      const before = (await rows(page)).length;

      // The first call returns: its completion and the second call's start arrive live.
      g.open('a');
      await page.waitForFunction(
        () => document.querySelector('#dag g.node[data-node=first]')?.getAttribute('data-status') === 'completed' && document.querySelector('#dag g.node[data-node=second]')?.getAttribute('data-status') === 'running',
        undefined,
        { timeout: 30_000 },
      );
      const during = await rows(page);
      expect(during.length).toBeGreaterThan(before);
      expect(during).toContain('capability.completed');
      expect(await page.evaluate(() => document.body.dataset.live)).toBe('following');
      expect(await page.textContent('#run-status')).toBe('running');

      // The run ends: the page opens the final export and replays it.
      g.open('b');
      await page.waitForSelector('body[data-live=ended][data-ready="1"]', { timeout: 30_000 });
      expect((await handle.result).status).toBe('completed');
      expect(await page.textContent('#run-status')).toBe('completed');
      expect(await drawnStates(page)).toEqual({ start: 'completed', first: 'completed', second: 'completed', end: 'completed' });
      const seq = (await rt.readEvents(handle.runId)).lastSeq;
      expect(await page.textContent('#run-events')).toContain(String(seq));
      expect(await rows(page)).toContain('run.completed');
      expect(await page.locator('#replay-report').getAttribute('data-mode')).toBe('inspect');
      expect(await page.locator('#replay-recorded').isDisabled()).toBe(false);
      // Chromium reports a streamed fetch body read to its end through a reader as aborted
      // (playwright issue 42742); the stream itself ended normally (the page saw the run's end).
      expect(problems.filter((p) => !/^requestfailed: \S+\/events net::ERR_ABORTED$/.test(p))).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('says so when the run does not exist', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${api.url}/page/?run=no-such-run`);
      await page.waitForSelector('body[data-ready=error]', { timeout: 30_000 });
      expect(await page.textContent('#status')).toContain('run.not-found');
    } finally {
      await page.close();
    }
  });

  it('sends the token from the URL fragment, and says so when it is missing', async () => {
    const token = 'page-token-0123456789abcdef';
    const guarded = await startHttpApi(rt, { port: 0, token });
    const handle = await rt.launch(chain('tokened', []));
    expect((await handle.result).status).toBe('completed');
    const page = await browser.newPage();
    try {
      await page.goto(`${guarded.url}/page/?run=${encodeURIComponent(handle.runId)}`);
      await page.waitForSelector('body[data-ready=error]', { timeout: 30_000 });
      expect(await page.textContent('#status')).toContain('http.unauthorized');

      // A new document (a change of the fragment alone does not reload the page).
      await page.goto('about:blank');
      await page.goto(`${guarded.url}/page/?run=${encodeURIComponent(handle.runId)}#token=${token}`);
      await page.waitForSelector('body[data-ready="1"]', { timeout: 30_000 });
      expect(await page.textContent('#run-status')).toBe('completed');
      expect(await page.textContent('#run-id')).toBe(handle.runId);
    } finally {
      await page.close();
      await guarded.close();
    }
  });
});

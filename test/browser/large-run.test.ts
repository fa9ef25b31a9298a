// A 100,000-event export in the replay page: the journal is paged (one page of rows in the DOM),
// paging and jumping to a seq show the right events, the graph and the run's result are shown,
// the page stays usable while the component replays (the replay runs in a worker), and the
// page's inspect report agrees with the Node host's for the same export. Functional checks only:
// nothing here asserts a duration.
//
// The export comes from bench/browser/large-export.mjs (recorded with the built SDK, cached under
// the OS temp dir by engine build digest; the first run records it, about 20-50 s).
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveReplay, type ReplayServer } from '../../dist/hosts/browser/serve.js';
import { parseExport, replayExport } from '../../dist/hosts/node/sdk/export.js';
// @ts-ignore: a plain ES module shared with the bench
import { largeRunEventsMin, largeRunExport, largeRunItems } from '../../bench/browser/large-export.mjs';
import { drawnStates, launchChromium, watchPage } from './page-driver.js';

/** Rows the journal table may hold at once, whatever the size of the run. */
const rowsMax = 200;

let browser: Browser;
let server: ReplayServer;
let page: Page;
let problems: string[];
let events: any[];
let nodeInspect: Record<string, any>;

const rowSeqs = (p: Page) => p.evaluate(() => [...document.querySelectorAll<HTMLElement>('#timeline tbody tr')].map((tr) => Number(tr.dataset.seq)));
const rowTypes = (p: Page) => p.evaluate(() => [...document.querySelectorAll('#timeline tbody tr')].map((tr) => tr.children[2]!.textContent));
const reportCount = (p: Page) => p.evaluate(() => Number(document.querySelector<HTMLElement>('#replay-report')!.dataset.count ?? 0));

describe('browser replay page: a 100,000-event run', () => {
  beforeAll(async () => {
    const { file } = await largeRunExport();
    const exported = parseExport(JSON.parse(readFileSync(file, 'utf8')));
    events = exported.events as any[];
    [browser, server] = await Promise.all([launchChromium(), serveReplay({ exportFile: file })]);
    page = await browser.newPage();
    problems = watchPage(page);
    await page.goto(server.url);
    // The Node host's inspect replay runs while the page loads the same export.
    const ready = page.waitForSelector('body[data-ready="1"], body[data-ready="error"]', { timeout: 120_000 });
    nodeInspect = (await replayExport(exported, { mode: 'inspect' })) as Record<string, any>;
    await ready;
    expect(await page.evaluate(() => document.body.dataset.ready), String(await page.textContent('#status'))).toBe('1');
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('has at least 100,000 events and keeps one page of them in the DOM', async () => {
    expect(events.length).toBeGreaterThanOrEqual(largeRunEventsMin);
    expect(await page.textContent('#run-events')).toBe(events.length.toLocaleString('en'));
    const seqs = await rowSeqs(page);
    expect(seqs.length).toBeGreaterThan(0);
    expect(seqs.length).toBeLessThanOrEqual(rowsMax);
    expect(seqs).toEqual(events.slice(0, seqs.length).map((e) => e.seq));
    expect(await page.evaluate(() => document.querySelectorAll('#timeline tr').length)).toBeLessThanOrEqual(rowsMax + 1);
    expect(await page.textContent('#timeline-position')).toContain(`of ${events.length.toLocaleString('en')}`);
  });

  it('pages forward and jumps to seq 100,000 and to the last event', async () => {
    const first = await rowSeqs(page);
    await page.click('#timeline [data-page=next]');
    const second = await rowSeqs(page);
    expect(second.length).toBeLessThanOrEqual(rowsMax);
    expect(second[0]).toBe(first[first.length - 1] + 1);
    expect(second).toEqual(events.slice(first.length, first.length + second.length).map((e) => e.seq));
    expect(await rowTypes(page)).toEqual(events.slice(first.length, first.length + second.length).map((e) => e.type));

    await page.fill('#timeline-jump [name=seq]', '100000');
    await page.press('#timeline-jump [name=seq]', 'Enter');
    await page.waitForSelector('#timeline tbody tr.marked[data-seq="100000"]');
    const around = await rowSeqs(page);
    expect(around.length).toBeLessThanOrEqual(rowsMax);
    expect(around).toContain(100_000);
    const at = await page.evaluate(() => document.querySelector('#timeline tbody tr.marked')!.children[2]!.textContent);
    expect(at).toBe(events[100_000 - 1].type);

    await page.click('#timeline [data-page=last]');
    const last = await rowSeqs(page);
    expect(last.length).toBeLessThanOrEqual(rowsMax);
    expect(last[last.length - 1]).toBe(events[events.length - 1].seq);
    expect(await rowTypes(page)).toEqual(events.slice(events.length - last.length).map((e) => e.type));
    expect(last[last.length - 1]).toBe(events.length);
  });

  it('draws the graph in the Node host inspect states and shows the result', async () => {
    const states = await drawnStates(page);
    expect(Object.keys(states).sort()).toEqual(['count', 'each', 'end', 'start']);
    expect(states).toEqual(Object.fromEntries(Object.entries<any>(nodeInspect.nodes).map(([id, n]) => [id, n.status])));
    expect(await page.textContent('#run-status')).toBe('completed');
    const result = await page.textContent('#result-body');
    expect(result).toContain('Output');
    expect(result).toContain(String(largeRunItems));
  });

  it("reports the same inspect replay as the Node host (outcome and node states)", async () => {
    expect(await page.getAttribute('#replay-report', 'data-mode')).toBe('inspect');
    const pageInspect = JSON.parse((await page.textContent('#replay-report')) ?? '');
    expect(pageInspect.events).toBe(events.length);
    expect(nodeInspect.outcome).toEqual({ status: 'completed', output: { count: largeRunItems } });
    expect(pageInspect.outcome).toEqual(nodeInspect.outcome);
    const statesOf = (r: Record<string, any>) => Object.fromEntries(Object.entries<any>(r.nodes).map(([id, n]) => [id, { status: n.status, attempt: n.attempt }]));
    expect(statesOf(pageInspect)).toEqual(statesOf(nodeInspect));
    expect(await page.textContent('#replay-report')).toBe(JSON.stringify(nodeInspect));
  });

  it('stays usable while the component replays the run', async () => {
    expect(await page.evaluate(() => document.body.dataset.replayer)).toBe('worker');
    const before = await reportCount(page);
    const reportBefore = await page.textContent('#replay-report');
    await page.click('#replay-inspect');
    // A replay of 100,000 events takes seconds; the journal answers meanwhile.
    await page.click('#timeline [data-page=first]');
    await page.click('#timeline [data-page=next]');
    expect((await rowSeqs(page))[0]).toBe(events[(await rowSeqs(page)).length].seq);
    expect(await reportCount(page)).toBe(before);
    expect(await page.isDisabled('#replay-recorded')).toBe(true);
    await page.waitForFunction((n) => Number(document.querySelector<HTMLElement>('#replay-report')!.dataset.count ?? 0) > n, before, { timeout: 60_000 });
    expect(await page.textContent('#replay-report')).toBe(reportBefore);
    expect(problems).toEqual([]);
  });
});

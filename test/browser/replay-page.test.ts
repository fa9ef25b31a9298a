// The browser replay page in headless Chromium: for every example run, the recorded replay computed in the page by the engine component must equal the Node
// host's `replay --from <export> --mode recorded` report byte for byte.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveReplay, type ReplayServer } from '../../dist/hosts/browser/serve.js';
import { parseExport, replayExport } from '../../dist/hosts/node/sdk/export.js';
import { openReplayPage, drawnStates, launchChromium, lineOfPageReport, nodeReplayLine, openFile, replayInPage, reportOfLine, root, runExample, watchPage, writeJson, type ExampleRun } from './page-driver.js';

const examples = ['weekly-report', 'echo', 'risk-branch', 'contracts-batch'];
const outputDir = join(root, 'test-output', 'browser');
const pageDir = join(root, 'dist', 'browser');

let work: string;
let browser: Browser;
let server: ReplayServer;
let page: Page;
let problems: string[];
const runs = new Map<string, ExampleRun>();

beforeAll(async () => {
  if (!existsSync(join(pageDir, 'index.html'))) throw new Error('dist/browser is not built: run `node build.mjs`');
  work = mkdtempSync(join(tmpdir(), 'adw-browser-'));
  mkdirSync(outputDir, { recursive: true });
  const [b, s, ...made] = await Promise.all([launchChromium(), serveReplay(), ...examples.map((name) => runExample(name, join(work, `state-${name}`), work))]);
  browser = b;
  server = s;
  for (const r of made) runs.set(r.name, r);
  ({ page, problems } = await openReplayPage(browser, server.url, { width: 1400, height: 1000 }));
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Node states the Node host's inspect replay reports for an export. */
async function nodeInspectStates(file: string): Promise<Record<string, string>> {
  const report = (await replayExport(parseExport(JSON.parse(readFileSync(file, 'utf8'))), { mode: 'inspect' })) as { nodes: Record<string, { status: string }> };
  return Object.fromEntries(Object.entries(report.nodes).map(([id, n]) => [id, n.status]));
}

describe('browser replay page: examples', () => {
  for (const name of examples) {
    it(`${name}: recorded replay in Chromium equals the Node host's report byte for byte`, async () => {
      const r = runs.get(name)!;
      await openFile(page, r.exportFile);
      const text = await replayInPage(page, 'recorded');
      expect(text).toBe(reportOfLine(r.nodeRecordedLine));
      expect(lineOfPageReport(text)).toBe(r.nodeRecordedLine);
      // The graph shows every node of the pinned plan, in the state the Node host rebuilds.
      const exported = JSON.parse(readFileSync(r.exportFile, 'utf8'));
      const planNodes = exported.plan.templates[exported.plan.root].template.spec.nodes.map((n: { id: string }) => n.id).sort();
      const drawn = await drawnStates(page);
      expect(Object.keys(drawn).sort()).toEqual(planNodes);
      const inspected = await nodeInspectStates(r.exportFile);
      for (const id of planNodes) expect(drawn[id], id).toBe(inspected[id] ?? 'pending');
      expect(await page.locator('#timeline tbody tr').count()).toBe(Math.min(100, exported.events.length));
      expect(problems).toEqual([]);
    });
  }

  it('weekly-report opened with ?src= from replay-web\'s server; screenshot of the graph and the journal', async () => {
    const r = runs.get('weekly-report')!;
    const preloaded = await serveReplay({ exportFile: r.exportFile });
    const p = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const seen = watchPage(p);
    try {
      await p.goto(preloaded.url);
      await p.waitForSelector('body[data-ready="1"]', { timeout: 30_000 });
      expect(await p.textContent('#run-id')).toBe(r.runId);
      const text = await replayInPage(p, 'recorded');
      expect(lineOfPageReport(text)).toBe(r.nodeRecordedLine);
      await p.click('#dag g.node[data-node=analyse]');
      expect(await p.textContent('#node-panel-body h3')).toBe('analyse');
      await p.screenshot({ path: join(outputDir, 'weekly-report.png'), fullPage: true });
      expect(existsSync(join(outputDir, 'weekly-report.png'))).toBe(true);
      expect(seen).toEqual([]);
    } finally {
      await p.close();
      await preloaded.close();
    }
  });

  it('a tampered export diverges, and the page reports the same first divergence as the Node host', async () => {
    const r = runs.get('risk-branch')!;
    const exported = JSON.parse(readFileSync(r.exportFile, 'utf8'));
    const completed = exported.events.find((e: { type: string; payload: { ok?: boolean } }) => e.type === 'capability.completed' && e.payload.ok);
    expect(completed).toBeDefined();
    completed.payload.output = { tampered: true };
    const file = writeJson(join(work, 'risk-branch-tampered.json'), exported);
    const nodeLine = await nodeReplayLine(file);
    expect(JSON.parse(nodeLine), nodeLine.slice(0, 400)).toMatchObject({ kind: 'ReplayReport', identical: false });
    await openFile(page, file);
    const text = await replayInPage(page, 'recorded');
    expect(lineOfPageReport(text)).toBe(nodeLine);
    expect(await page.textContent('#replay-verdict')).toContain(`diverged at event ${JSON.parse(nodeLine).firstDivergence.seq}`);
  });

  it('works opened from the built files (file://) with a chosen file', async () => {
    const r = runs.get('echo')!;
    const p = await browser.newPage();
    const seen = watchPage(p);
    try {
      await p.goto(pathToFileURL(join(pageDir, 'index.html')).href);
      await p.waitForSelector('body[data-ready=idle]', { timeout: 30_000 });
      await openFile(p, r.exportFile);
      expect(lineOfPageReport(await replayInPage(p, 'recorded'))).toBe(r.nodeRecordedLine);
      expect(seen).toEqual([]);
    } finally {
      await p.close();
    }
  });

  it('refuses a file that is not a run export and says why', async () => {
    const file = writeJson(join(work, 'not-an-export.json'), { hello: 'world' });
    await page.setInputFiles('#file-input', file);
    await page.waitForFunction(() => document.body.dataset.ready === 'error', undefined, { timeout: 10_000 });
    expect(await page.textContent('#status')).toContain('not a run export');
  });
});

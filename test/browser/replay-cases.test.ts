// Every host-independent case of test/cases/ replayed in the browser page: the case runs on the
// Node host (built SDK), its export is opened in headless Chromium, and the page's recorded replay
// must equal the Node host's `replayExport` report (what `replay --from` prints) byte for byte.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveReplay, type ReplayServer } from '../../dist/hosts/browser/serve.js';
import { parseExport, replayExport } from '../../dist/hosts/node/sdk/export.js';
import { caseNames, loadCase } from '../helpers/cases.js';
import { openRuntime } from '../helpers/node-host.js';
import { openReplayPage, launchChromium, openFile, replayInPage, root, writeJson } from './page-driver.js';

const names = existsSync(join(root, 'test', 'cases')) ? caseNames() : [];

let work: string;
let browser: Browser;
let server: ReplayServer;
let page: Page;
let problems: string[];

/** Runs a case on the Node host and returns its export file and the Node host's recorded report. */
async function nodeSide(name: string): Promise<{ file: string; report: string }> {
  const c = await loadCase(name);
  const rt = await openRuntime(c.host);
  let file: string;
  try {
    const handle = await rt.launch({ type: 'inline', template: c.template, dependencies: c.host.dependencies ?? [] }, { input: c.input });
    await handle.settled();
    file = writeJson(join(work, `${name}.json`), await rt.exportRun(handle.runId));
  } finally {
    await rt.close();
  }
  const report = await replayExport(parseExport(JSON.parse(readFileSync(file, 'utf8'))), { mode: 'recorded' });
  return { file, report: JSON.stringify(report) };
}

describe.runIf(names.length > 0)('browser replay page: test/cases', () => {
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'adw-browser-cases-'));
    [browser, server] = await Promise.all([launchChromium(), serveReplay()]);
    ({ page, problems } = await openReplayPage(browser, server.url));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('replays every case in Chromium exactly as the Node host does', async () => {
    const mismatches: string[] = [];
    // The Node side of the next case runs while the page replays the current one.
    let next = nodeSide(names[0]);
    for (let i = 0; i < names.length; i++) {
      const { file, report } = await next;
      if (i + 1 < names.length) next = nodeSide(names[i + 1]);
      await openFile(page, file);
      const text = await replayInPage(page, 'recorded');
      if (text !== report) mismatches.push(`${names[i]}:\n  node:    ${report.slice(0, 400)}\n  browser: ${text.slice(0, 400)}`);
    }
    expect(mismatches).toEqual([]);
    expect(problems).toEqual([]);
  }, 120_000);
});

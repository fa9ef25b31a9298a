// The replay page shows an agent loop: each turn with its tool calls (a refused one marked), the
// answer the output schema sent back, and the tokens per node and per run. The run is the
// data-only case test/cases/agent-loop-tools on the Node host, replayed in Chromium.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveReplay, type ReplayServer } from '../../dist/hosts/browser/serve.js';
import { loadCase } from '../helpers/cases.js';
import { openRuntime } from '../helpers/node-host.js';
import { launchChromium, openFile, openReplayPage, replayInPage, writeJson } from './page-driver.js';

let work: string;
let browser: Browser;
let server: ReplayServer;
let page: Page;
let problems: string[];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'adw-agent-page-'));
  [browser, server] = await Promise.all([launchChromium(), serveReplay()]);
  ({ page, problems } = await openReplayPage(browser, server.url));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('replay page: an agent loop', () => {
  it('shows turns, tool calls and usage', async () => {
    const c = await loadCase('agent-loop-tools');
    const rt = await openRuntime(c.host);
    let file: string;
    try {
      const handle = await rt.launch({ type: 'inline', template: c.template }, { input: c.input });
      await handle.settled();
      file = writeJson(join(work, 'agent.json'), await rt.exportRun(handle.runId));
    } finally {
      await rt.close();
    }
    await openFile(page, file);
    const report = JSON.parse((await replayInPage(page, 'recorded')).split('\n').find((l) => l.startsWith('{')) ?? '{}');
    expect(report).toMatchObject({ identical: true });
    expect(await page.textContent('#run-usage')).toBe('3 model turns · 270 tokens');

    await page.click('#dag g.node[data-node=planner]');
    expect(await page.textContent('#agent-usage')).toBe('Turns (3) · 240 tokens in · 30 out');
    const summaries = await page.locator('#node-panel-body details.turn > summary').allTextContents();
    expect(summaries).toEqual(['turn 1 · 3 tool calls · 40 in / 10 out · tool-calls', 'turn 2 · answer · 80 in / 10 out · stop', 'turn 3 · answer · 120 in / 10 out · stop']);
    const turn1 = await page.locator('#node-panel-body details.turn[data-turn="1"] h5').allTextContents();
    expect(turn1).toEqual(['Text', 'weather (call-1) · ok', 'adder (call-2) · ok', 'erase (call-3) · refused']);
    const turn2 = await page.locator('#node-panel-body details.turn[data-turn="2"] p.hl-failure').allTextContents();
    expect(turn2).toEqual(['the output does not match its schema: /sum must be integer']);
    // Each model turn and each tool call of the loop is an attempt row of its own.
    const attempts = await page.locator('#node-panel-body details.attempt > summary').allTextContents();
    expect(attempts).toEqual([
      'attempt 1',
      'attempt 1 · model:scripted · succeeded',
      'attempt 1 · tool:weather · succeeded',
      'attempt 1 · tool:adder · succeeded',
      'attempt 1 · tool:erase · refused',
      'attempt 1 · model:scripted · succeeded',
      'attempt 1 · model:scripted · succeeded',
    ]);
    expect(problems).toEqual([]);
  }, 120_000);
});

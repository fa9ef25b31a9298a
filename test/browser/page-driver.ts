// Drives the built replay page (dist/browser/) in headless Chromium through playwright-core, and
// produces run exports and the Node host's replay reports to compare with.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import { portableIdSource } from '../../engine/protocol/ids.js';

const run = promisify(execFile);
export const root = new URL('../../', import.meta.url).pathname;
export const cli = join(root, 'dist', 'hosts', 'node', 'cli', 'main.js');
export const chromiumPath = '/usr/bin/chromium';
export const cliApiVersion = 'agent-workflow.cli/v1';

export function launchChromium(): Promise<Browser> {
  if (!existsSync(chromiumPath)) throw new Error(`${chromiumPath} is missing: apt-get install -y chromium`);
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
}

/** A new page on the replay page at `url`, watched (`watchPage`), once the page is ready. */
export async function openReplayPage(browser: Browser, url: string, viewport?: { width: number; height: number }): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage(viewport ? { viewport } : {});
  const problems = watchPage(page);
  await page.goto(url);
  await page.waitForSelector('body[data-ready=idle]', { timeout: 30_000 });
  return { page, problems };
}

/** Page errors and failed requests, so a test can require that there were none. */
export function watchPage(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`requestfailed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  return problems;
}

async function loads(page: Page): Promise<number> {
  return page.evaluate(() => Number(document.body.dataset.loads ?? 0));
}

/** Opens an export through the page's file picker and waits until the page has shown it. */
export async function openFile(page: Page, file: string): Promise<void> {
  const before = await loads(page);
  await page.setInputFiles('#file-input', file);
  await page.waitForFunction((n) => Number(document.body.dataset.loads ?? 0) > n || document.body.dataset.ready === 'error', before, { timeout: 30_000 });
  const ready = await page.evaluate(() => document.body.dataset.ready);
  if (ready !== '1') throw new Error(`the page did not open ${file}: ${await page.textContent('#status')}`);
}

/** Clicks a replay button and returns the report text the page shows. */
export async function replayInPage(page: Page, mode: 'inspect' | 'recorded'): Promise<string> {
  const before = await page.evaluate(() => Number(document.querySelector<HTMLElement>('#replay-report')!.dataset.count ?? 0));
  await page.click(mode === 'recorded' ? '#replay-recorded' : '#replay-inspect');
  await page.waitForFunction((n) => Number(document.querySelector<HTMLElement>('#replay-report')!.dataset.count ?? 0) > n, before, { timeout: 30_000 });
  const pre = page.locator('#replay-report');
  if ((await pre.getAttribute('data-mode')) !== mode) throw new Error(`the page shows a ${await pre.getAttribute('data-mode')} report, not ${mode}`);
  return (await pre.textContent()) ?? '';
}

/** Node states drawn in the graph, by node id. */
export async function drawnStates(page: Page): Promise<Record<string, string>> {
  return page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#dag g.node')].map((g) => [g.getAttribute('data-node')!, g.getAttribute('data-status')!])));
}

export interface ExampleRun {
  name: string;
  runId: string;
  exportFile: string;
  /** The line `agent-workflow replay --from <file> --mode recorded` printed. */
  nodeRecordedLine: string;
}

/** `<id>@<rev>.json` files of called workflows, as the CLI reads a host module's `dependencies` folder. */
function readDependencies(dir: string): { template: unknown; revision: number }[] {
  const out: { template: unknown; revision: number }[] = [];
  for (const name of readdirSync(dir).sort()) {
    const m = new RegExp(`^(${portableIdSource})@([1-9][0-9]*)\\.json$`).exec(name);
    if (m) out.push({ template: JSON.parse(readFileSync(join(dir, name), 'utf8')), revision: Number(m[2]) });
  }
  return out;
}

/**
 * Runs an example with the built SDK (dist/) and its host module in `stateDir`, exports the run,
 * and replays the export with the built CLI (`replay --from <file> --mode recorded`).
 */
export async function runExample(name: string, stateDir: string, outDir: string): Promise<ExampleRun> {
  const ex = join(root, 'examples', name);
  const host = (await import(pathToFileURL(join(ex, 'agent-workflow.config.mjs')).href)).default;
  const dependencies = typeof host.dependencies === 'string' ? readDependencies(resolve(ex, host.dependencies)) : [];
  const { WorkflowRuntime } = await import('../../dist/hosts/node/index.js');
  const rt = await WorkflowRuntime.open({ ...host, dir: stateDir, log: () => undefined });
  let runId: string;
  const exportFile = join(outDir, `${name}.json`);
  try {
    const template = JSON.parse(readFileSync(join(ex, `${name}.json`), 'utf8'));
    const input = JSON.parse(readFileSync(join(ex, 'input.json'), 'utf8'));
    const handle = await rt.launch({ type: 'inline', template, dependencies }, { input });
    await handle.settled();
    runId = handle.runId;
    writeJson(exportFile, await rt.exportRun(runId));
  } finally {
    await rt.close();
  }
  return { name, runId, exportFile, nodeRecordedLine: await nodeReplayLine(exportFile) };
}

/** `agent-workflow replay --from <file> --mode recorded`: its stdout line (exit 7 when diverged). */
export async function nodeReplayLine(exportFile: string): Promise<string> {
  const out = await run(process.execPath, [cli, 'replay', '--from', exportFile, '--mode', 'recorded']).catch((err) => err as { stdout: string; code?: number });
  return String(out.stdout).trim();
}

/** The report inside a CLI line, re-serialised without the envelope (key order is kept). */
export function reportOfLine(line: string): string {
  const { apiVersion, kind, ...report } = JSON.parse(line);
  if (apiVersion !== cliApiVersion || kind !== 'ReplayReport') throw new Error(`not a replay report: ${line.slice(0, 200)}`);
  return JSON.stringify(report);
}

/** What the CLI would print for a report the page produced. */
export function lineOfPageReport(text: string): string {
  return `{"apiVersion":"${cliApiVersion}","kind":"ReplayReport",${text.slice(1)}`;
}

export function writeJson(file: string, value: unknown): string {
  writeFileSync(file, `${JSON.stringify(value)}\n`);
  return file;
}

// Browser replay page in headless Chromium next to the Node host: page-ready time (navigation to
// graph + journal + inspect replay shown) and recorded replay throughput, for the weekly-report
// example and for foreach runs of 100 to 50,000 script items (two events per item).
//
//   node bench/browser/bench.mjs [--items 100,200,5000,50000] [--repeat 3]
//
// Needs `node build.mjs` and /usr/bin/chromium. Prints a table; asserts nothing.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const root = new URL('../../', import.meta.url).pathname;
const dist = join(root, 'dist');
const chromiumArgs = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'];

function foreachTemplate(items) {
  return {
    apiVersion: 'workflow.gm-hz.dev/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { id: `bench-foreach-${items}` },
    spec: {
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'each', uses: 'core.foreach@1', config: { maxConcurrency: 64, maxItems: items, body: { uses: 'core.script@1', config: { source: 'return input * 2 + 1' } } }, inputs: { items: { source: 'input', path: '/numbers' } } },
        { id: 'count', uses: 'core.script@1', config: { source: 'return input.each.results.length' }, inputs: { each: { source: 'output', nodeId: 'each' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'count' },
        { from: 'count', to: 'end' },
      ],
    },
  };
}

async function makeExports(work, itemCounts) {
  const { WorkflowRuntime } = await import(pathToFileURL(join(dist, 'hosts', 'node', 'index.js')).href);
  const out = [];
  const weekly = join(root, 'examples', 'weekly-report');
  const host = (await import(pathToFileURL(join(weekly, 'agent-workflow.config.mjs')).href)).default;
  const runs = [{ label: 'weekly-report', host, template: JSON.parse(readFileSync(join(weekly, 'weekly-report.json'), 'utf8')), input: JSON.parse(readFileSync(join(weekly, 'input.json'), 'utf8')) }];
  for (const n of itemCounts) runs.push({ label: `foreach ${n.toLocaleString('en')} items`, host: {}, template: foreachTemplate(n), input: { numbers: Array.from({ length: n }, (_, i) => i) } });
  for (const r of runs) {
    const rt = await WorkflowRuntime.open({ ...r.host, dir: join(work, `state-${out.length}`), log: () => undefined });
    try {
      // A run the engine cannot complete is reported as a row, not a crash of the bench.
      await (async () => {
      const handle = await rt.launch({ type: 'inline', template: r.template }, { input: r.input });
      const outcome = await handle.settled();
      const file = join(work, `run-${out.length}.json`);
      const exported = rt.exportRun(handle.runId);
      writeFileSync(file, JSON.stringify(exported));
      out.push({ label: r.label, file, events: exported.events.length, status: outcome.status });
      })().catch((err) => out.push({ label: r.label, error: `${err.code ?? 'error'}: ${err.message}` }));
    } finally {
      await rt.close();
    }
  }
  return out;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function nodeReplayMs(file, repeat) {
  const { parseExport, replayExport } = await import(pathToFileURL(join(dist, 'hosts', 'node', 'export.js')).href);
  const exported = parseExport(JSON.parse(readFileSync(file, 'utf8')));
  await replayExport(exported, { mode: 'recorded' }); // compiles the modules once, as a long-lived process would have
  const times = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    const report = await replayExport(exported, { mode: 'recorded' });
    times.push(performance.now() - t0);
    if (report.identical !== true) throw new Error(`node replay of ${file} is not identical`);
  }
  return median(times);
}

async function browserFigures(browser, file, repeat) {
  const { serveReplay } = await import(pathToFileURL(join(dist, 'hosts', 'browser', 'serve.js')).href);
  const server = await serveReplay({ exportFile: file });
  const ready = [];
  const replay = [];
  try {
    for (let i = 0; i < repeat; i++) {
      // A fresh context each time: nothing cached, as for a first visit.
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(server.url);
      await page.waitForSelector('body[data-ready="1"]', { timeout: 600_000 });
      ready.push(await page.evaluate(() => globalThis.__pageReadyMs));
      await page.click('#replay-recorded');
      await page.waitForFunction(() => document.querySelector('#replay-report')?.dataset.mode === 'recorded', undefined, { timeout: 600_000 });
      const { ms } = await page.evaluate(() => globalThis.__lastReplay);
      const identical = await page.evaluate(() => JSON.parse(document.querySelector('#replay-report').textContent).identical);
      if (identical !== true) throw new Error(`browser replay of ${file} is not identical`);
      replay.push(ms);
      await context.close();
    }
  } finally {
    await server.close();
  }
  return { readyMs: median(ready), replayMs: median(replay) };
}

export async function runBrowserBench(options = {}) {
  const itemCounts = options.items ?? [100, 200, 5000, 50000];
  const repeat = options.repeat ?? 3;
  const work = mkdtempSync(join(tmpdir(), 'adw-browser-bench-'));
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: chromiumArgs });
  const rows = [];
  try {
    for (const run of await makeExports(work, itemCounts)) {
      if (run.error) {
        rows.push({ run: run.label, events: '-', error: run.error });
        continue;
      }
      const nodeMs = await nodeReplayMs(run.file, repeat);
      const b = await browserFigures(browser, run.file, repeat);
      rows.push({
        run: run.label,
        events: run.events,
        'page ready ms (chromium)': Math.round(b.readyMs),
        'recorded replay ms (chromium)': Math.round(b.replayMs),
        'events/s (chromium)': Math.round(run.events / (b.replayMs / 1000)),
        'recorded replay ms (node)': Math.round(nodeMs),
        'events/s (node)': Math.round(run.events / (nodeMs / 1000)),
      });
    }
  } finally {
    await browser.close();
    rmSync(work, { recursive: true, force: true });
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const arg = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
  const items = arg('--items') ? arg('--items').split(',').map(Number) : undefined;
  const repeat = arg('--repeat') ? Number(arg('--repeat')) : undefined;
  const rows = await runBrowserBench({ items, repeat });
  console.table(rows);
}

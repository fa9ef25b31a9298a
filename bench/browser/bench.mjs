// Browser replay page in headless Chromium next to the Node host: page-ready time (navigation to
// graph + journal + inspect replay shown) and recorded replay throughput, for the weekly-report
// example and for foreach runs of 100 to 50,000 script items (two events per item); then the
// 100,000-event export of large-export.mjs (a foreach of 24,996 tool items): page ready, time to
// show the next journal page and to jump to seq 100,000, inspect and recorded replay in Chromium
// (in the page's worker) and on the Node host.
//
//   node bench/browser/bench.mjs [--items 100,200,5000,50000|none] [--repeat 3] [--large-repeat 1] [--no-large]
//
// Needs `node build.mjs` and /usr/bin/chromium. Prints a table; asserts nothing.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { largeRunExport } from './large-export.mjs';

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
    // A foreach of scripts settles every item in one activation: 50,000 items make a commit of
    // ~61 MB, past the default bound (16 MiB, `commitBytesMax`), which the bench raises for them.
    const rt = await WorkflowRuntime.open({ ...r.host, dir: join(work, `state-${out.length}`), log: () => undefined, commitBytesMax: 128 * 1024 * 1024 });
    try {
      // A run the engine cannot complete is reported as a row, not a crash of the bench.
      await (async () => {
      const handle = await rt.launch({ type: 'inline', template: r.template }, { input: r.input });
      const outcome = await handle.settled();
      const file = join(work, `run-${out.length}.json`);
      const exported = await rt.exportRun(handle.runId);
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

async function nodeReplayMs(file, repeat, mode = 'recorded', warm = true) {
  const { parseExport } = await import(pathToFileURL(join(dist, 'hosts', 'core', 'export-format.js')).href);
  const { replayExport } = await import(pathToFileURL(join(dist, 'hosts', 'node', 'sdk', 'export.js')).href);
  const exported = parseExport(JSON.parse(readFileSync(file, 'utf8')));
  if (warm) await replayExport(exported, { mode }); // compiles the modules once, as a long-lived process would have
  const times = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    const report = await replayExport(exported, { mode });
    times.push(performance.now() - t0);
    if (mode === 'recorded' && report.identical !== true) throw new Error(`node replay of ${file} is not identical`);
  }
  return median(times);
}

/** Milliseconds from a click in the page to the journal table holding the new rows (measured in the page). */
async function timelineMs(page, action) {
  return page.evaluate(async (act) => {
    const body = document.querySelector('#timeline tbody');
    const t0 = performance.now();
    if (act === 'next') document.querySelector('#timeline [data-page=next]').click();
    else {
      document.querySelector('#timeline-jump [name=seq]').value = '100000';
      document.querySelector('#timeline-jump').requestSubmit();
    }
    const ms = performance.now() - t0; // show() is synchronous: the rows are in the DOM now
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    if (body.querySelectorAll('tr').length > 200) throw new Error('more than one page of rows');
    if (act === 'jump' && !body.querySelector('tr.marked[data-seq="100000"]')) throw new Error('seq 100000 is not shown');
    return { ms, paintedMs: performance.now() - t0 };
  }, action);
}

/** The 100,000-event run: every figure once per repeat, in a fresh browser context each time. */
async function largeFigures(browser, file, events, repeat) {
  const { serveReplay } = await import(pathToFileURL(join(dist, 'hosts', 'browser', 'serve.js')).href);
  const server = await serveReplay({ exportFile: file });
  const f = { ready: [], inspect: [], next: [], jump: [], recorded: [] };
  try {
    for (let i = 0; i < repeat; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(server.url);
      await page.waitForSelector('body[data-ready="1"]', { timeout: 600_000 });
      f.ready.push(await page.evaluate(() => globalThis.__pageReadyMs));
      f.inspect.push((await page.evaluate(() => globalThis.__lastReplay)).ms);
      f.next.push((await timelineMs(page, 'next')).paintedMs);
      f.jump.push((await timelineMs(page, 'jump')).paintedMs);
      await page.click('#replay-recorded');
      await page.waitForFunction(() => document.querySelector('#replay-report')?.dataset.mode === 'recorded', undefined, { timeout: 900_000 });
      f.recorded.push((await page.evaluate(() => globalThis.__lastReplay)).ms);
      if ((await page.evaluate(() => JSON.parse(document.querySelector('#replay-report').textContent).identical)) !== true) throw new Error('browser replay of the large run is not identical');
      await context.close();
    }
  } finally {
    await server.close();
  }
  const nodeInspect = await nodeReplayMs(file, repeat, 'inspect', false);
  const nodeRecorded = await nodeReplayMs(file, repeat, 'recorded', false);
  const eps = (ms) => Math.round(events / (ms / 1000));
  return {
    run: `foreach 24,996 tool items (large-export.mjs)`,
    events,
    'page ready ms (chromium)': Math.round(median(f.ready)),
    'next page ms (chromium)': Math.round(median(f.next)),
    'jump to seq 100000 ms (chromium)': Math.round(median(f.jump)),
    'inspect ms (chromium)': Math.round(median(f.inspect)),
    'inspect events/s (chromium)': eps(median(f.inspect)),
    'inspect ms (node)': Math.round(nodeInspect),
    'inspect events/s (node)': eps(nodeInspect),
    'recorded replay ms (chromium)': Math.round(median(f.recorded)),
    'events/s (chromium)': eps(median(f.recorded)),
    'recorded replay ms (node)': Math.round(nodeRecorded),
    'events/s (node)': eps(nodeRecorded),
  };
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
  const large = options.large ?? true;
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
    if (large) {
      const t0 = performance.now();
      const big = await largeRunExport();
      console.error(`large export: ${big.events} events, ${big.cached ? 'cached' : `recorded in ${Math.round(performance.now() - t0)} ms`} (${big.file})`);
      rows.push(await largeFigures(browser, big.file, big.events, options.largeRepeat ?? 1));
    }
  } finally {
    await browser.close();
    rmSync(work, { recursive: true, force: true });
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const arg = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
  const items = arg('--items') === 'none' ? [] : arg('--items') ? arg('--items').split(',').map(Number) : undefined;
  const repeat = arg('--repeat') ? Number(arg('--repeat')) : undefined;
  const largeRepeat = arg('--large-repeat') ? Number(arg('--large-repeat')) : undefined;
  const rows = await runBrowserBench({ items, repeat, largeRepeat, large: !process.argv.includes('--no-large') });
  console.table(rows);
}

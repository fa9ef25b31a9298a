// A run of at least 100,000 journal events, recorded with the built Node SDK and exported with
// `runtime.exportRun`: a `core.foreach@1` over 24,996 items whose body calls an in-process tool
// (`double`: returns its input times two, idempotent), 4 events per item, then a `core.script@1`
// that counts the results. The foreach output (24,996 small numbers) stays far below the
// engine's 1 MiB node-output limit.
//
// Recording takes about 40-50 s on a 2-core machine, so the export is cached under the OS temp
// dir, keyed by a digest of the engine build (dist/component/*.wasm), the Node host files that
// write and export the journal, and this generator's parameters. Used by
// test/browser/large-run.test.ts and bench/browser/bench.mjs.
//
//   node bench/browser/large-export.mjs        # prints {"file", "events", "cached", "recordMs"}
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = new URL('../../', import.meta.url).pathname;
const dist = join(root, 'dist');

/** Items of the foreach: the fewest that give at least 100,000 events (4 per item, plus the run's own). */
export const largeRunItems = 24_996;
export const largeRunEventsMin = 100_000;

export function largeRunTemplate(items = largeRunItems) {
  return {
    apiVersion: 'workflow.gm-hz.dev/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { id: 'large-foreach' },
    spec: {
      requires: ['tool:double'],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'each', uses: 'core.foreach@1', config: { maxConcurrency: 256, maxItems: items, body: { uses: 'tool.call@1', config: { tool: 'double', idempotent: true } } }, inputs: { items: { source: 'input', path: '/numbers' } } },
        { id: 'count', uses: 'core.script@1', config: { source: 'return input.each.results.length' }, inputs: { each: { source: 'output', nodeId: 'each' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'count' },
        { from: 'count', to: 'end' },
      ],
      outputs: { count: { source: 'output', nodeId: 'count' } },
    },
  };
}

export const largeRunTools = { double: { idempotent: true, execute: (x) => x * 2 } };

/** Digest of what the export's bytes depend on: the engine build, the Node host, this generator. */
export function engineBuildDigest(items = largeRunItems) {
  const hash = createHash('sha256');
  const component = join(dist, 'component');
  const files = [
    ...readdirSync(component).filter((f) => f.endsWith('.wasm')).sort().map((f) => join(component, f)),
    join(dist, 'hosts', 'node', 'runtime.js'),
    join(dist, 'hosts', 'node', 'stores', 'sqlite', 'journal.js'),
    join(dist, 'hosts', 'core', 'export-format.js'),
  ];
  for (const f of files) {
    hash.update(f.slice(dist.length));
    hash.update(existsSync(f) ? readFileSync(f) : Buffer.alloc(0));
  }
  hash.update(JSON.stringify({ template: largeRunTemplate(items), tool: String(largeRunTools.double.execute) }));
  return hash.digest('hex').slice(0, 16);
}

/** Records the run with the built SDK in a temporary state dir and writes its export to `file`. */
export async function recordLargeRun(file, items = largeRunItems) {
  const { WorkflowRuntime } = await import(pathToFileURL(join(dist, 'hosts', 'node', 'index.js')).href);
  const dir = mkdtempSync(join(tmpdir(), 'adw-large-run-'));
  const t0 = performance.now();
  const rt = await WorkflowRuntime.open({ tools: largeRunTools, dir, log: () => undefined });
  try {
    const handle = await rt.launch({ type: 'inline', template: largeRunTemplate(items) }, { input: { numbers: Array.from({ length: items }, (_, i) => i) } });
    const outcome = await handle.settled();
    if (outcome.status !== 'completed') throw new Error(`the large run ended ${outcome.status}`);
    const exported = await rt.exportRun(handle.runId);
    const recordMs = performance.now() - t0;
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(exported));
    renameSync(tmp, file);
    return { file, events: exported.events.length, recordMs };
  } finally {
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The cached export for the current build, recorded first when missing. */
export async function largeRunExport(items = largeRunItems) {
  const file = join(tmpdir(), `adw-large-run-${items}-${engineBuildDigest(items)}.json`);
  if (existsSync(file)) {
    const events = JSON.parse(readFileSync(file, 'utf8')).events.length;
    return { file, events, cached: true };
  }
  return { ...(await recordLargeRun(file, items)), cached: false };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await largeRunExport();
  console.log(JSON.stringify({ ...r, ...(r.recordMs !== undefined ? { recordMs: Math.round(r.recordMs) } : {}) }));
}

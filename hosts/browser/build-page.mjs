// Builds the static replay page into dist/browser/: index.html, styles.css, app.js (one classic
// script, so the page also runs from file://), replay-worker.js (the classic worker script the
// page replays in over http(s)), wasm/ (the engine's core modules and the QuickJS
// binary, byte-identical to the ones the Node host loads) and wasm-inline.js (the same bytes as
// base64, loaded only from file://, where fetch() is refused). No CDN, nothing fetched at run time
// except these files.
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as esbuild from 'esbuild';

/** The wasm binary of quickjs-emscripten's RELEASE_SYNC variant, resolved the way the package resolves it. */
export function quickjsWasmPath(root) {
  const fromRoot = createRequire(join(root, 'package.json'));
  const fromQuickjs = createRequire(fromRoot.resolve('quickjs-emscripten/package.json'));
  return fromQuickjs.resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
}

export async function buildBrowserPage({ root, dist }) {
  const here = join(root, 'hosts', 'browser');
  const out = join(dist, 'browser');
  const componentDir = join(dist, 'component');
  if (!existsSync(join(componentDir, 'engine.js'))) throw new Error('build-page: dist/component/engine.js is missing (build the engine first)');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, 'wasm'), { recursive: true });

  const result = await esbuild.build({
    entryPoints: [
      { in: join(here, 'page', 'main.ts'), out: 'app' },
      { in: join(here, 'page', 'replay-worker.ts'), out: 'replay-worker' },
    ],
    outdir: out,
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome120'],
    minify: true,
    sourcemap: 'linked',
    legalComments: 'none',
    // jco's output reads files with node:fs only when no core-module loader is given; the page
    // always gives one.
    external: ['node:*'],
    logLevel: 'warning',
    logOverride: { 'empty-import-meta': 'silent' },
    define: { 'process.env.NODE_ENV': '"production"' },
    plugins: [
      {
        name: 'engine-component',
        setup(build) {
          // hosts/browser/component.ts imports the jco output by its path under dist/.
          build.onResolve({ filter: /(^|\/)component\/engine\.js$/ }, () => ({ path: join(componentDir, 'engine.js') }));
        },
      },
    ],
    metafile: true,
  });
  if (result.errors.length > 0) throw new Error('build-page: bundling the page failed');

  const wasmFiles = readdirSync(componentDir).filter((f) => f.endsWith('.wasm')).sort();
  for (const f of wasmFiles) copyFileSync(join(componentDir, f), join(out, 'wasm', f));
  copyFileSync(quickjsWasmPath(root), join(out, 'wasm', 'quickjs.wasm'));
  const inline = {};
  for (const f of [...wasmFiles, 'quickjs.wasm']) inline[f] = readFileSync(join(out, 'wasm', f)).toString('base64');
  writeFileSync(join(out, 'wasm-inline.js'), `globalThis.__agentWorkflowWasm=${JSON.stringify(inline)};\n`);

  copyFileSync(join(here, 'page', 'index.html'), join(out, 'index.html'));
  copyFileSync(join(here, 'page', 'styles.css'), join(out, 'styles.css'));
  writeFileSync(join(out, 'manifest.json'), `${JSON.stringify({ files: ['index.html', 'styles.css', 'app.js', 'replay-worker.js', 'wasm-inline.js', ...wasmFiles.map((f) => `wasm/${f}`), 'wasm/quickjs.wasm'] }, null, 2)}\n`);
  return { out };
}

// `node hosts/browser/build-page.mjs` rebuilds the page alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const root = join(dirname(new URL(import.meta.url).pathname), '..', '..');
  await buildBrowserPage({ root, dist: join(root, 'dist') });
}

// Builds the console into dist/console/: index.html, styles.css and console.js (one script,
// bundled by esbuild; no framework, nothing fetched from a CDN). Served by `serve --http` under
// /console/ (hosts/node/observe/http-api.ts); its run pages are the replay page under /page/.
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as esbuild from 'esbuild';

export async function buildConsole({ root, dist }) {
  const here = join(root, 'hosts', 'console');
  const out = join(dist, 'console');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const result = await esbuild.build({
    entryPoints: [{ in: join(here, 'main.ts'), out: 'console' }],
    outdir: out,
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome120'],
    minify: true,
    sourcemap: 'linked',
    legalComments: 'none',
    logLevel: 'warning',
  });
  if (result.errors.length > 0) throw new Error('build-console: bundling the console failed');
  copyFileSync(join(here, 'index.html'), join(out, 'index.html'));
  copyFileSync(join(here, 'styles.css'), join(out, 'styles.css'));
  return { out };
}

// `node hosts/console/build-console.mjs` rebuilds the console alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const root = join(dirname(new URL(import.meta.url).pathname), '..', '..');
  await buildConsole({ root, dist: join(root, 'dist') });
}

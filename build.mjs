#!/usr/bin/env node
// Builds the package: engine/ -> esbuild bundle -> WebAssembly component (QuickJS back-end via
// jco componentize) -> jco transpile (async instantiation) into dist/component/, and transpiles the
// TypeScript of hosts/ and sandbox/ into dist/. Incremental: each step is skipped when the
// digest of its inputs matches the one recorded by its last successful run.
//
//   node build.mjs                 build what changed
//   node build.mjs --force         rebuild everything
//   node build.mjs --backend sm    also build the SpiderMonkey component into dist/component-sm/ (benchmarks)
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, 'dist');
const args = process.argv.slice(2);
const force = args.includes('--force');
const extraBackend = args.includes('--backend') ? args[args.indexOf('--backend') + 1] : undefined;
const jco = join(root, 'node_modules', '@bytecodealliance', 'jco', 'dist', 'jco.js');

function listFiles(dir, filter = () => true) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(p, filter));
    else if (filter(p)) out.push(p);
  }
  return out.sort();
}

function digestOf(files) {
  const h = createHash('sha256');
  for (const f of files) h.update(relative(root, f)).update('\0').update(readFileSync(f)).update('\0');
  return h.digest('hex');
}

async function step(name, inputs, outputs, run) {
  const stampFile = join(dist, '.stamps', `${name}.sha256`);
  const digest = digestOf(inputs);
  const fresh = !force && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === digest && outputs.every((o) => existsSync(o));
  if (fresh) return false;
  const t0 = Date.now();
  rmSync(stampFile, { force: true });
  await run();
  mkdirSync(dirname(stampFile), { recursive: true });
  writeFileSync(stampFile, digest);
  process.stderr.write(`build: ${name} (${Date.now() - t0} ms)\n`);
  return true;
}

const engineInputs = [
  ...listFiles(join(root, 'engine'), (p) => p.endsWith('.ts')),
  ...listFiles(join(root, 'wit')),
  join(root, 'build.mjs'),
  join(root, 'package-lock.json'),
].filter(existsSync);

async function bundleEngine(outfile) {
  await esbuild.build({
    entryPoints: [join(root, 'engine', 'index.ts')],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['module', 'main'],
    external: ['gm-hz:workflow/*'],
    outfile,
    logLevel: 'warning',
    legalComments: 'none',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
}

function componentize(backend, bundle, wasmOut) {
  const common = ['componentize', bundle, '--wit', join(root, 'wit'), '--world-name', 'workflow-engine', '-o', wasmOut];
  if (backend === 'quickjs') {
    execFileSync(process.execPath, [jco, ...common, '--backend', 'quickjs', '--backend-qjs-disable-async', '--backend-qjs-stub-wasi'], { stdio: ['ignore', 'ignore', 'inherit'] });
  } else {
    execFileSync(process.execPath, [jco, ...common, '--disable', 'all'], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
}

function transpile(wasm, outDir) {
  rmSync(outDir, { recursive: true, force: true });
  execFileSync(process.execPath, [jco, 'transpile', wasm, '--instantiation', 'async', '--name', 'engine', '-o', outDir, '--quiet'], { stdio: ['ignore', 'ignore', 'inherit'] });
}

async function buildEngine(backend, outDir) {
  const bundle = join(dist, `engine-bundle-${backend}.js`);
  const wasm = join(dist, backend === 'quickjs' ? 'engine.wasm' : `engine-${backend}.wasm`);
  await step(`engine-${backend}`, engineInputs, [join(outDir, 'engine.js'), wasm], async () => {
    await bundleEngine(bundle);
    componentize(backend, bundle, wasm);
    transpile(wasm, outDir);
  });
}

async function transpileHosts() {
  const sources = [
    ...listFiles(join(root, 'hosts'), (p) => p.endsWith('.ts') && !p.endsWith('.d.ts')),
    ...listFiles(join(root, 'sandbox'), (p) => p.endsWith('.ts') && !p.endsWith('.d.ts')),
  ];
  const inputs = [...sources, join(root, 'build.mjs')];
  const outputs = sources.map((s) => join(dist, relative(root, s)).replace(/\.ts$/, '.js'));
  await step('hosts', inputs, outputs, () => {
    const result = esbuild.buildSync({
      entryPoints: sources,
      outdir: dist,
      outbase: root,
      bundle: false,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: 'linked',
      logLevel: 'warning',
    });
    if (result.errors.length > 0) throw new Error('transpiling hosts failed');
  });
}

async function buildBrowser() {
  const builder = join(root, 'hosts', 'browser', 'build-page.mjs');
  if (!existsSync(builder)) return;
  const { buildBrowserPage } = await import(builder);
  const inputs = [...listFiles(join(root, 'hosts', 'browser')), ...listFiles(join(root, 'hosts', 'core')), ...listFiles(join(root, 'sandbox')), ...listFiles(join(dist, 'component')), join(root, 'build.mjs')];
  await step('browser', inputs, [join(dist, 'browser', 'index.html')], () => buildBrowserPage({ root, dist }));
}

mkdirSync(dist, { recursive: true });
await buildEngine('quickjs', join(dist, 'component'));
if (extraBackend === 'sm') await buildEngine('sm', join(dist, 'component-sm'));
await transpileHosts();
await buildBrowser();

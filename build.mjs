#!/usr/bin/env node
// Builds the package: engine/ -> esbuild bundle -> WebAssembly component (QuickJS back-end via
// jco componentize) -> jco transpile (async instantiation, hybrid import bindings) into dist/component/, and transpiles the
// TypeScript of hosts/ and sandbox/ into dist/. Incremental: each step is skipped when the
// digest of its inputs matches the one recorded by its last successful run.
//
//   node build.mjs                 build what changed
//   node build.mjs --force         rebuild everything
//   node build.mjs --backend sm    also build the SpiderMonkey component into dist/component-sm/ (benchmarks)
//   node build.mjs --types         only generate the guest declarations from wit/ (what `tsc` needs)
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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

function digestOfFiles(files) {
  const h = createHash('sha256');
  for (const f of files) h.update(relative(root, f)).update('\0').update(readFileSync(f)).update('\0');
  return h.digest('hex');
}

async function step(name, inputs, outputs, run) {
  const stampFile = join(dist, '.stamps', `${name}.sha256`);
  const digest = digestOfFiles(inputs);
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

// SpiderMonkey's regular expressions have no Unicode property escapes; ajv's fast-uri uses one.
const asciiEscapePlugin = {
  name: 'ascii-property-escape',
  setup(build) {
    build.onLoad({ filter: /fast-uri[\\/]index\.js$/ }, async (args) => ({
      contents: (await import('node:fs')).readFileSync(args.path, 'utf8').replaceAll('/\\P{ASCII}/u', '/[^\\x00-\\x7F]/u'),
      loader: 'js',
    }));
  },
};

async function bundleEngine(outfile, backend) {
  await esbuild.build({
    plugins: backend === 'sm' ? [asciiEscapePlugin] : [],
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

async function componentize(backend, bundle, wasmOut) {
  if (backend === 'quickjs') {
    const args = ['componentize', bundle, '--wit', join(root, 'wit'), '--world-name', 'workflow-engine', '-o', wasmOut];
    execFileSync(process.execPath, [jco, ...args, '--backend', 'quickjs', '--backend-qjs-disable-async', '--backend-qjs-stub-wasi'], { stdio: ['ignore', 'ignore', 'inherit'] });
    return;
  }
  // SpiderMonkey (StarlingMonkey) through componentize-js itself; it resolves the source
  // relative to the working directory it preopens.
  const { componentize: componentizeJs } = await import('@bytecodealliance/componentize-js');
  const cwd = process.cwd();
  process.chdir(dirname(bundle));
  try {
    const { component } = await componentizeJs({
      sourcePath: `./${relative(dirname(bundle), bundle)}`,
      witPath: join(root, 'wit'),
      worldName: 'workflow-engine',
      disableFeatures: ['stdio', 'random', 'clocks', 'http', 'fetch-event'],
    });
    writeFileSync(wasmOut, component);
  } finally {
    process.chdir(cwd);
  }
}

// The transpiled bindings call `_debugLog` dozens of times around every import and export call,
// and each call reads `process.env.JCO_DEBUG` (a getenv in Node): ~66,000 instructions per
// activation of a 2-step run (bench/instructions). The switch is read once instead; setting
// JCO_DEBUG still turns the log on, for a process started with it.
const debugLogPerCall = `  const _debugLog = (...args) => {
    if (!globalThis?.process?.env?.JCO_DEBUG) { return; }`;
const debugLogOnce = `  const _debugEnabled = Boolean(globalThis?.process?.env?.JCO_DEBUG);
  const _debugLog = (...args) => {
    if (!_debugEnabled) { return; }`;

// `--import-bindings hybrid`: an import that carries a `Symbol.for('cabiLower')` function gets to
// read its arguments from the component's memory itself, in place of the bindings' generic import
// path, which builds a task and a subtask around every call (hosts/core/engine-instance.ts gives
// one to journal.load, journal.commit, gateway.request and gateway.cancel: ≈ 330,000 fewer
// instructions per activation of a 2-step run; and to digest.sha256, ≈ 20 µs a call, which an
// agent's model turn makes). The build fails if the bindings stop asking.
const rawLoweredImports = ['load', 'commit', 'request', 'cancel', 'sha256'];

// Where the runtime has no JSPI (Node 20), each `WebAssembly.promising(f)` of the instantiation
// throws "WebAssembly.promising is not a function", which the bindings catch. V8 renders that
// message by parsing the whole enclosing function again (the instantiation's generator, thousands
// of lines): ≈ 2 ms per throw, 9 throws, ≈ 18 ms of every engine instantiation (bench/cold). The
// rewrite asks once whether the function exists and, when it does not, throws one prepared error,
// so the bindings' `catch` takes the same branch as before.
const promisingCall = 'WebAssembly.promising(';
const promisingOnce = `const _promisingOrThrow = typeof WebAssembly.promising === 'function'
  ? (f) => WebAssembly.promising(f)
  : (() => { const absent = new TypeError('WebAssembly.promising is not a function'); return () => { throw absent; }; })();
`;

function transpile(wasm, outDir) {
  rmSync(outDir, { recursive: true, force: true });
  execFileSync(process.execPath, [jco, 'transpile', wasm, '--instantiation', 'async', '--import-bindings', 'hybrid', '--name', 'engine', '-o', outDir, '--quiet'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const bindings = join(outDir, 'engine.js');
  const text = readFileSync(bindings, 'utf8');
  if (text.split(debugLogPerCall).length !== 2) throw new Error(`build: ${bindings} no longer has the _debugLog this build rewrites (jco changed); update debugLogPerCall in build.mjs`);
  for (const name of rawLoweredImports) {
    if (!text.includes(`if (${name}[symbolCabiLower]) {`)) throw new Error(`build: ${bindings} does not ask the ${name} import for its own lowering (jco changed); see rawLoweredImports in build.mjs`);
  }
  const head = '"use components";\n';
  if (!text.startsWith(head) || !text.includes(promisingCall)) throw new Error(`build: ${bindings} no longer starts with ${JSON.stringify(head)} or calls ${promisingCall}…) (jco changed); update promisingCall in build.mjs`);
  const rewritten = head + promisingOnce + text.slice(head.length).replace(debugLogPerCall, debugLogOnce).replaceAll(promisingCall, '_promisingOrThrow(');
  writeFileSync(bindings, rewritten);
}

/**
 * The guest's declarations of the component's interfaces (`declare module 'gm-hz:workflow/…'`),
 * generated from wit/ by jco's bindgen into dist/guest-types/, which tsconfig.json includes.
 * The bindgen is handed the WIT text: its file-path input reads through a WASI filesystem that
 * jco's `guest-types` command leaves without preopened directories.
 */
async function generateGuestTypes() {
  const witFiles = listFiles(join(root, 'wit'), (p) => p.endsWith('.wit'));
  const outDir = join(dist, 'guest-types');
  await step('guest-types', [...witFiles, join(root, 'build.mjs')], [join(outDir, 'workflow-engine.d.ts')], async () => {
    if (witFiles.length !== 1) throw new Error(`guest types: wit/ must hold one .wit file, found ${witFiles.length}`);
    const fromJco = createRequire(join(root, 'node_modules', '@bytecodealliance', 'jco', 'package.json'));
    const bindgen = await import(pathToFileURL(fromJco.resolve('@bytecodealliance/jco-transpile/component')).href);
    await bindgen.$init;
    const files = bindgen.generateTypes('workflow-engine', {
      wit: { tag: 'source', val: readFileSync(witFiles[0], 'utf8') },
      world: 'workflow-engine',
      guest: true,
      features: { tag: 'list', val: [] },
    });
    rmSync(outDir, { recursive: true, force: true });
    for (const [name, bytes] of files) {
      mkdirSync(dirname(join(outDir, name)), { recursive: true });
      writeFileSync(join(outDir, name), bytes);
    }
  });
}

/**
 * Declarations for the transpiled hosts, so that tests (which import dist/, as users do) are
 * type-checked against the sources: each `dist/<path>.d.ts` re-exports `<path>.ts`. One line per
 * module; tsconfig.json includes test/.
 */
async function writeHostDeclarations() {
  const sources = [
    ...listFiles(join(root, 'hosts'), (p) => p.endsWith('.ts') && !p.endsWith('.d.ts')),
    ...listFiles(join(root, 'sandbox'), (p) => p.endsWith('.ts') && !p.endsWith('.d.ts')),
    ...engineModulesOfHosts,
  ];
  const outputs = sources.map((s) => join(dist, relative(root, s)).replace(/\.ts$/, '.d.ts'));
  await step('host-declarations', [...sources, join(root, 'build.mjs')], outputs, () => {
    for (const [i, source] of sources.entries()) {
      const out = outputs[i];
      const target = relative(dirname(out), source).replace(/\.ts$/, '.js');
      const hasDefault = /^export default /m.test(readFileSync(source, 'utf8'));
      mkdirSync(dirname(out), { recursive: true });
      writeFileSync(out, `export * from '${target}';\n${hasDefault ? `export { default } from '${target}';\n` : ''}`);
    }
  });
}

async function buildEngine(backend, outDir) {
  const bundle = join(dist, `engine-bundle-${backend}.js`);
  const wasm = join(dist, backend === 'quickjs' ? 'engine.wasm' : `engine-${backend}.wasm`);
  await step(`engine-${backend}`, engineInputs, [join(outDir, 'engine.js'), wasm], async () => {
    await bundleEngine(bundle, backend);
    await componentize(backend, bundle, wasm);
    transpile(wasm, outDir);
  });
}

// Hosts import the engine's protocol (types, statuses, the portable-id pattern) and its limits
// from the engine's sources: pure TypeScript without imports of the component's interfaces.
const engineModulesOfHosts = [...listFiles(join(root, 'engine', 'protocol'), (p) => p.endsWith('.ts') && !p.endsWith('.d.ts')), join(root, 'engine', 'limits.ts')];

async function transpileHosts() {
  const sources = [
    ...listFiles(join(root, 'hosts'), (p) => p.endsWith('.ts') && !p.endsWith('.d.ts')),
    ...listFiles(join(root, 'sandbox'), (p) => p.endsWith('.ts') && !p.endsWith('.d.ts')),
    ...engineModulesOfHosts,
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

// `agent-workflow-router`: a shell launcher that replaces itself (exec) with Node started with the
// router's memory flags, so no re-exec wrapper shares the router's memory budget. The flags come
// from the transpiled hosts/router/memory-flags.js, the one list the router checks at start.
async function writeRouterLauncher() {
  const flagsModule = join(dist, 'hosts', 'router', 'memory-flags.js');
  const launcher = join(dist, 'hosts', 'router', 'agent-workflow-router');
  await step('router-launcher', [join(root, 'hosts', 'router', 'memory-flags.ts'), join(root, 'build.mjs')], [launcher], async () => {
    const { routerNodeFlags } = await import(pathToFileURL(flagsModule).href);
    if (!routerNodeFlags.every((f) => /^--[a-z0-9-]+(=[0-9]+)?$/.test(f))) throw new Error(`router memory flags are not plain options: ${routerNodeFlags.join(' ')}`);
    const text = [
      '#!/bin/sh',
      '# agent-workflow-router: the router host (docs/router.md) started with its memory flags in place',
      '# of this shell, so that no wrapper process shares its memory budget. Generated by build.mjs.',
      'self=$(readlink -f -- "$0") || { echo "agent-workflow-router: cannot resolve $0" >&2; exit 70; }',
      'command -v node >/dev/null 2>&1 || { echo "agent-workflow-router: node is not on PATH" >&2; exit 70; }',
      `exec node ${routerNodeFlags.join(' ')} "\${self%/*}/cli.js" "$@"`,
      '',
    ].join('\n');
    writeFileSync(launcher, text);
    chmodSync(launcher, 0o755);
  });
}

async function buildConsolePages() {
  const { buildConsole } = await import(join(root, 'hosts', 'console', 'build-console.mjs'));
  const inputs = [...listFiles(join(root, 'hosts', 'console')), join(root, 'hosts', 'browser', 'page', 'live-follow.ts'), join(root, 'build.mjs')];
  await step('console', inputs, [join(dist, 'console', 'index.html')], () => buildConsole({ root, dist }));
}

async function buildBrowser() {
  const builder = join(root, 'hosts', 'browser', 'build-page.mjs');
  if (!existsSync(builder)) return;
  const { buildBrowserPage } = await import(builder);
  const inputs = [...listFiles(join(root, 'hosts', 'browser')), ...listFiles(join(root, 'hosts', 'core')), ...listFiles(join(root, 'sandbox')), ...listFiles(join(dist, 'component')), join(root, 'build.mjs')];
  await step('browser', inputs, [join(dist, 'browser', 'index.html')], () => buildBrowserPage({ root, dist }));
}

mkdirSync(dist, { recursive: true });
await generateGuestTypes();
await writeHostDeclarations();
if (!args.includes('--types')) {
  await buildEngine('quickjs', join(dist, 'component'));
  if (extraBackend === 'sm') await buildEngine('sm', join(dist, 'component-sm'));
  await transpileHosts();
  await writeRouterLauncher();
  await buildBrowser();
  await buildConsolePages();
}

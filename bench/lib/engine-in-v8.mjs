// The floor "engine bundle directly in V8": the same engine/ sources, bundled for Node with the
// WIT imports mapped to plain functions, driven exactly like the component (a 2-step run of
// no-op tool calls, answered immediately). The difference to the component's figure is what the
// WebAssembly boundary and the guest interpreter cost.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { twoStepTemplate } from './templates.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Bundles engine/index.ts with `gm-hz:workflow/*` resolved to handlers on `globalThis.__engineHost`. */
async function bundleEngine() {
  const esbuild = await import('esbuild');
  const dir = mkdtempSync(join(tmpdir(), 'bench-engine-v8-'));
  const outfile = join(dir, 'engine.mjs');
  await esbuild.build({
    entryPoints: [join(root, 'engine', 'index.ts')],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    outfile,
    logLevel: 'warning',
    plugins: [
      {
        name: 'wit-imports',
        setup(build) {
          build.onResolve({ filter: /^gm-hz:workflow\// }, (args) => ({ path: args.path, namespace: 'wit' }));
          build.onLoad({ filter: /.*/, namespace: 'wit' }, (args) => {
            const iface = args.path.replace(/^gm-hz:workflow\//, '').replace(/@.*$/, '');
            const names = { journal: ['load', 'commit'], gateway: ['request', 'cancel'], sandbox: ['evaluate', 'checkSyntax'], digest: ['sha256'], log: ['write'] }[iface];
            return { contents: names.map((n) => `export function ${n}(...a) { return globalThis.__engineHost.${iface}.${n}(...a); }`).join('\n'), loader: 'js' };
          });
        },
      },
    ],
  });
  return { outfile, dir };
}

export async function measureEngineInV8({ quick }) {
  const { outfile, dir } = await bundleEngine();
  try {
    const requests = [];
    globalThis.__engineHost = {
      journal: { load: () => undefined, commit: () => undefined },
      gateway: { request: (r) => requests.push(JSON.parse(r)), cancel: () => undefined },
      sandbox: { evaluate: () => ({ output: 'null', fuelUsed: 0 }), checkSyntax: () => undefined },
      digest: { sha256: (text) => createHash('sha256').update(text).digest('hex') },
      log: { write: () => undefined },
    };
    const { engine } = await import(pathToFileURL(outfile).href);
    const plan = JSON.parse(engine.compile(JSON.stringify({ root: { template: twoStepTemplate } })));
    let n = 0;
    const runOnce = () => {
      const runId = `run-${n++}`;
      requests.length = 0;
      engine.activate(JSON.stringify({ runId, now: 1_700_000_000_000, facts: [{ type: 'run-requested', input: {}, authority: { id: 'b', scopes: ['*'] } }], plan }));
      let activations = 1;
      while (requests.length > 0) {
        const facts = requests.splice(0).map((r) => ({ type: 'capability-completed', invocationId: r.invocationId, ok: true, output: null }));
        engine.activate(JSON.stringify({ runId, now: 1_700_000_000_000, facts }));
        activations++;
      }
      return activations;
    };
    for (let i = 0; i < (quick ? 200 : 2000); i++) runOnce();
    const samplesMs = [];
    for (let i = 0; i < (quick ? 300 : 3000); i++) {
      const t = performance.now();
      const activations = runOnce();
      samplesMs.push((performance.now() - t) / activations);
    }
    return { samplesMs };
  } finally {
    delete globalThis.__engineHost;
    rmSync(dir, { recursive: true, force: true });
  }
}

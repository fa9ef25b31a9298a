/**
 * Builds the service's worker (and a service entry for child processes) from
 * the TypeScript sources with esbuild, so the tests run the same code the
 * build step ships without depending on dist/.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('../../', import.meta.url));
/**
 * Inside the repository so that bare imports resolve from its node_modules;
 * one directory per checkout, since worktrees may share node_modules.
 */
export const buildDir = `${root}node_modules/.cache/sandbox-test-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`;

let built: Promise<void> | undefined;

export function buildServiceBundles(): Promise<void> {
  built ??= (async () => {
    mkdirSync(buildDir, { recursive: true });
    // node_modules stops the package-scope lookup; declare ESM here.
    writeFileSync(`${buildDir}/package.json`, '{"type":"module"}\n');
    const common = { bundle: true, platform: 'node', format: 'esm', packages: 'external', target: 'node20', logLevel: 'warning' } as const;
    await build({ ...common, entryPoints: [`${root}sandbox/service/worker.ts`], outfile: `${buildDir}/worker.js` });
    await build({ ...common, entryPoints: [`${root}sandbox/service/index.ts`], outfile: `${buildDir}/service.js` });
  })();
  return built;
}

export function workerUrl(): URL {
  return pathToFileURL(`${buildDir}/worker.js`);
}

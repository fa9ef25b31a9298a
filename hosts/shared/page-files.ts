// The built replay page's files, served from a Node process: by the page's own dev server
// (`agent-workflow replay-web`, hosts/browser/serve.ts) and under /page/ by the Node host's HTTP
// API (hosts/node/observe/http-api.ts).
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const pageFileTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
};

/** dist/browser, next to this file's dist/hosts/shared. */
export const defaultPageDir = fileURLToPath(new URL('../../browser/', import.meta.url));

/**
 * A file of the built page by its path under the page (`/` is index.html), with its content type;
 * `undefined` when there is no such file or the path leaves the page's folder.
 */
export async function readPageFile(pageDir: string, path: string): Promise<{ body: Buffer; type: string } | undefined> {
  const dir = normalize(pageDir);
  const file = normalize(join(dir, path === '/' || path === '' ? 'index.html' : path));
  if (file !== dir && !file.startsWith(dir.endsWith(sep) ? dir : dir + sep)) return undefined;
  try {
    return { body: await readFile(file), type: pageFileTypes[extname(file)] ?? 'application/octet-stream' };
  } catch {
    return undefined;
  }
}


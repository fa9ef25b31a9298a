// A tiny static server for the replay page (Node only): dist/browser/ plus one run export at
// /export.json, on 127.0.0.1 by default. `agent-workflow replay-web` uses it.
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import { parseExportText } from './journal.js';
import { defaultPageDir, readPageFile } from '../shared/page-files.js';

export { defaultPageDir, readPageFile };

export interface ServeReplayOptions {
  /** A run export file to preload at /export.json. */
  exportFile?: string;
  /** The text of a run export (instead of `exportFile`). */
  exportText?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  host?: string;
  /** The built page (default: dist/browser next to this file's dist/hosts/browser). */
  pageDir?: string;
}

export interface ReplayServer {
  /** The page with the export opened (`?src=/export.json`), or the bare page. */
  url: string;
  origin: string;
  port: number;
  close(): Promise<void>;
}

export async function serveReplay(options: ServeReplayOptions = {}): Promise<ReplayServer> {
  const pageDir = normalize(options.pageDir ?? defaultPageDir);
  const host = options.host ?? '127.0.0.1';
  let exportText = options.exportText;
  if (exportText === undefined && options.exportFile !== undefined) exportText = await readFile(options.exportFile, 'utf8');
  // Refuse a broken export here, where the error can be printed, rather than in the page.
  if (exportText !== undefined) parseExportText(exportText);
  await readFile(join(pageDir, 'index.html')).catch(() => {
    throw Object.assign(new Error(`the replay page is not built (${join(pageDir, 'index.html')} is missing; run \`node build.mjs\`)`), { code: 'browser.page-missing' });
  });

  const send = (res: ServerResponse, status: number, body: string | Buffer, type = 'text/plain; charset=utf-8') => {
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
    res.end(body);
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'method not allowed\n');
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://localhost').pathname);
    if (path === '/export.json') return exportText === undefined ? send(res, 404, 'no export preloaded\n') : send(res, 200, exportText, 'application/json; charset=utf-8');
    const file = await readPageFile(pageDir, path);
    return file ? send(res, 200, file.body, file.type) : send(res, 404, 'not found\n');
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => send(res, 500, 'internal error\n'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url: exportText === undefined ? `${origin}/` : `${origin}/?src=/export.json`,
    origin,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

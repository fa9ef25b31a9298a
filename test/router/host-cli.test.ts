// The router entry: `agent-workflow router start …` through the built CLI. It must not load the
// Node host's SQLite store, an HTTP framework or MCP (node:net is loaded for the control socket, a
// unix socket in the state directory, never a TCP port); started without the memory flags it
// re-executes itself with them and forwards signals and the exit code.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir, memoryFlags } from './helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const mainJs = path.join(root, 'dist/hosts/node/cli/main.js');
const fixtures = path.join(root, 'test/router/fixtures');

function run(args: string[], env: Record<string, string> = {}, onStdout?: (line: any, child: ReturnType<typeof spawn>) => void) {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: any[] = [];
  let stderr = '';
  let buffered = '';
  child.stdout!.on('data', (chunk) => {
    buffered += chunk;
    let i;
    while ((i = buffered.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffered.slice(0, i));
      buffered = buffered.slice(i + 1);
      lines.push(line);
      onStdout?.(line, child);
    }
  });
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return new Promise<{ code: number | null; lines: any[]; stderr: string; pid: number }>((resolve) => child.on('exit', (code) => resolve({ code, lines, stderr, pid: child.pid! })));
}

describe('router entry', () => {
  it('runs the examples to completion with the memory flags and loads no SQLite, HTTP framework or MCP', async () => {
    const dir = tempDir('router-cli-');
    const loaded = path.join(dir, 'loaded-modules.txt');
    const out = await run(
      ['--import', path.join(fixtures, 'load-preload.mjs'), mainJs, 'router', 'start', '--dir', path.join(dir, 'state'), '--profile', 'standalone', '--config', path.join(fixtures, 'examples-host.mjs'), '--runs', path.join(fixtures, 'examples-runs.json'), '--cadence-ms', '2', '--until-idle'],
      { LOADED_MODULES_FILE: loaded },
    );
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const started = out.lines.find((l) => l.kind === 'RouterStarted');
    // Re-executed: the router runs in a child of the process that was started, with the flags.
    expect(started.pid).not.toBe(out.pid);
    expect(started.execArgv).toEqual(expect.arrayContaining([...memoryFlags]));
    const summary = out.lines.find((l) => l.kind === 'RouterSummary');
    expect(summary.runs).toHaveLength(16);
    expect(summary.runs.every((r: any) => r.status === 'completed')).toBe(true);
    const urls = fs.readFileSync(loaded, 'utf8').split('\n').filter(Boolean);
    expect(urls.some((u) => u.includes('/dist/hosts/router/runtime.js'))).toBe(true); // the hook saw the router
    const forbidden = urls.filter((u) => /better-sqlite3|bindings|undici|express|fastify|hono|koa|modelcontextprotocol|\/mcp|^node:(http|https|http2)$|hosts\/node\/(journal|runtime|gateway)\.js/.test(u));
    expect(forbidden).toEqual([]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('forwards SIGTERM to the re-executed router, which stops in order and exits 0', async () => {
    const dir = tempDir('router-cli-term-');
    let parent = 0;
    const out = await run([path.join(root, 'dist/hosts/router/cli.js'), 'start', '--dir', dir, '--profile', 'edge'], {}, (line, child) => {
      if (line.kind === 'RouterStarted') {
        parent = child.pid!;
        expect(line.pid).not.toBe(parent);
        child.kill('SIGTERM');
      }
    });
    expect(parent).not.toBe(0);
    expect(out.code).toBe(0);
    expect(out.stderr).toContain('SIGTERM: stopping');
    // The state directory was released: its lock can be taken again.
    const { FileJournalStore } = await import('../../dist/hosts/router/index.js');
    FileJournalStore.open(dir).close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a bad command line with the usage exit code', async () => {
    const out = await run([mainJs, 'router', 'start', '--dir', '/tmp/x', '--profile', 'huge']);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('--profile must be edge or standalone');
  });
});

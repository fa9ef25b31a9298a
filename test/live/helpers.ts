// CLI processes on one state directory with the live tests' host module.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Finished, Running, World } from '../ownership/helpers.js';

export { lastJson, template, until, writeTemplate } from '../ownership/helpers.js';

const cli = new URL('../../dist/hosts/node/cli/main.js', import.meta.url).pathname;
const hostModule = new URL('./fixtures/host.mjs', import.meta.url).pathname;

export function liveWorld(env: Record<string, string> = {}): World {
  const dir = mkdtempSync(join(tmpdir(), 'adw-live-'));
  const state = join(dir, 'state');
  return { dir, state, effectsLog: '', env: { STATE_DIR: state, GATE_FILE: join(dir, 'gate.open'), ...env } };
}

export function startCli(w: World, args: string[], env: Record<string, string> = {}): Running {
  const child = spawn(process.execPath, [cli, ...args, '--config', hostModule], { cwd: w.dir, env: { ...process.env, ...w.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<Finished>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done, out: () => stdout, runId: () => /run (\S+) accepted/.exec(stderr)?.[1] };
}

export function runCli(w: World, args: string[], env: Record<string, string> = {}): Promise<Finished> {
  return startCli(w, args, env).done;
}

/** JSON lines of a command's stdout. */
export function jsonLines(stdout: string): any[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

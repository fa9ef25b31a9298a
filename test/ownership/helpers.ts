// Real CLI processes against one state directory, and the tools' own log as the oracle.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const cli = new URL('../../dist/hosts/node/cli/main.js', import.meta.url).pathname;
export const hostModule = new URL('./fixtures/host.mjs', import.meta.url).pathname;
export const api = 'workflow.gm-hz.dev/v1alpha1';

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Running {
  child: ChildProcess;
  done: Promise<Finished>;
  /** stdout so far. */
  out(): string;
  /** stderr so far (the process's log). */
  err(): string;
  /** The run id the command announced on stderr (`run <id> accepted`), once it has. */
  runId(): string | undefined;
}

export interface World {
  dir: string;
  state: string;
  effectsLog: string;
  env: Record<string, string>;
  /** The host module the commands load (default: the ownership tests' own). */
  hostModule?: string;
}

export function world(env: Record<string, string> = {}): World {
  const dir = mkdtempSync(join(tmpdir(), 'adw-own-'));
  const state = join(dir, 'state');
  const effectsLog = join(dir, 'effects.log');
  writeFileSync(effectsLog, '');
  return { dir, state, effectsLog, env: { EFFECTS_LOG: effectsLog, STATE_DIR: state, ...env } };
}

/** Starts `agent-workflow <args>` with the test host module; `env` adds to the world's. */
export function start(w: World, args: string[], env: Record<string, string> = {}): Running {
  const child = spawn(process.execPath, [cli, ...args, '--config', w.hostModule ?? hostModule, '--dir', w.state], { cwd: w.dir, env: { ...process.env, ...w.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<Finished>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done, out: () => stdout, err: () => stderr, runId: () => /run (\S+) accepted/.exec(stderr)?.[1] };
}

export async function run(w: World, args: string[], env: Record<string, string> = {}): Promise<Finished> {
  return start(w, args, env).done;
}

/** The last JSON document a command printed. */
export function lastJson(stdout: string): any {
  const lines = stdout.trim().split('\n').filter(Boolean);
  if (lines.length === 0) throw new Error('the command printed nothing on stdout');
  return JSON.parse(lines[lines.length - 1]);
}

export interface Effect {
  tool: string;
  invocationId: string;
  item?: number;
  phase: 'start' | 'done' | 'aborted';
  pid: number;
  at: number;
}

export function effects(w: World): Effect[] {
  if (!existsSync(w.effectsLog)) return [];
  return readFileSync(w.effectsLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export function template(id: string, nodes: any[], edges: [string, string][], extra: Record<string, unknown> = {}): any {
  return {
    apiVersion: api,
    kind: 'WorkflowTemplate',
    metadata: { id },
    spec: { nodes: [{ id: 'start', uses: 'core.start@1' }, ...nodes, { id: 'end', uses: 'core.end@1' }], edges: edges.map(([from, to]) => ({ from, to })), ...extra },
  };
}

export function writeTemplate(w: World, name: string, t: unknown): string {
  const file = join(w.dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(t));
  return file;
}

/** Every event of a run, through the CLI (`trace`). */
export async function trace(w: World, runId: string): Promise<any[]> {
  const r = await run(w, ['trace', runId]);
  if (r.code !== 0) throw new Error(`trace exited ${r.code}: ${r.stderr}`);
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

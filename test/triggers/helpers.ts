// Helpers of the trigger tests: a store with the echo workflow published, real `serve`
// processes with the HTTP API on loopback, and signed requests.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { signDingtalk, signWebhook } from '../../dist/hosts/node/index.js';

export const cli = new URL('../../dist/hosts/node/cli/main.js', import.meta.url).pathname;
const ingressFaults = new URL('../helpers/ingress-faults.mjs', import.meta.url).pathname;
export const hostModule = new URL('./fixtures/host.mjs', import.meta.url).pathname;
export const echo = JSON.parse(readFileSync(new URL('../../examples/echo/echo.json', import.meta.url), 'utf8'));
export const api = 'workflow.gm-hz.dev/v1alpha1';

/** A workflow that waits for one approval, then echoes. */
export const approvalFlow = {
  apiVersion: api,
  kind: 'WorkflowTemplate',
  metadata: { id: 'approve-echo' },
  spec: {
    inputSchema: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
    requires: ['tool:echo', 'approval'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'gate', uses: 'human.approval@1', config: { prompt: 'go?', approvers: ['alice@example.com'] } },
      { id: 'echo', uses: 'tool.call@1', config: { tool: 'echo', idempotent: true }, inputs: { text: { source: 'input', path: '/text' } } },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [
      { from: 'start', to: 'gate' },
      { from: 'gate', to: 'echo' },
      { from: 'echo', to: 'end' },
    ],
    outputs: { echoed: { source: 'output', nodeId: 'echo', path: '/text' } },
  },
};

export interface World {
  dir: string;
  state: string;
  env: Record<string, string>;
}

export function world(env: Record<string, string> = {}): World {
  const dir = mkdtempSync(join(tmpdir(), 'adw-trig-'));
  const state = join(dir, 'state');
  return { dir, state, env: { STATE_DIR: state, ...env } };
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function cliRun(w: World, args: string[], env: Record<string, string> = {}): Promise<Finished> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args, '--config', hostModule], { cwd: w.dir, env: { ...process.env, ...w.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

export function lastJson(stdout: string): any {
  const lines = stdout.trim().split('\n').filter(Boolean);
  return JSON.parse(lines[lines.length - 1]);
}

/** `agent-workflow …` that must exit 0; its last JSON document. */
export async function cliOk(w: World, args: string[], env: Record<string, string> = {}): Promise<any> {
  const r = await cliRun(w, args, env);
  if (r.code !== 0) throw new Error(`agent-workflow ${args.join(' ')} exited ${r.code}: ${r.stderr}${r.stdout}`);
  return lastJson(r.stdout);
}

/** Writes a JSON file into the world and answers its path. */
export function file(w: World, name: string, value: unknown): string {
  const path = join(w.dir, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

/** Publishes a template through the CLI (draft put + publish). */
export async function publishTemplate(w: World, template: any): Promise<void> {
  const path = file(w, `${template.metadata.id}.json`, template);
  await cliOk(w, ['draft', 'put', path]);
  await cliOk(w, ['publish', template.metadata.id, '--expected', '1']);
}

/** Puts and publishes a binding through the CLI; answers the published binding. */
export async function publishBinding(w: World, spec: any): Promise<any> {
  const put = await cliOk(w, ['binding', 'put', file(w, `binding-${spec.id}.json`, spec)]);
  return (await cliOk(w, ['binding', 'publish', `${spec.id}@${put.binding.revision}`])).binding;
}

export interface Server {
  child: ChildProcess;
  url: string;
  stderr(): string;
  done: Promise<Finished>;
  stop(): Promise<Finished>;
}

/** `agent-workflow serve --http 0 --insecure-no-auth`, ready once it printed where it listens. */
export async function serve(w: World, env: Record<string, string> = {}, extra: string[] = []): Promise<Server> {
  // A crash test names a fault: the test-only module that injects it is installed in the process.
  const faults = env.AGENT_WORKFLOW_FAULT_INGRESS !== undefined ? ['--import', ingressFaults] : [];
  const child = spawn(process.execPath, [...faults, cli, 'serve', '--http', '0', '--insecure-no-auth', '--config', hostModule, ...extra], { cwd: w.dir, env: { ...process.env, ...w.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<Finished>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const m = /"http":"([^"]+)"/.exec(stdout);
      if (m) {
        clearInterval(timer);
        resolve(m[1]);
      }
    }, 20);
    void done.then((f) => {
      clearInterval(timer);
      reject(new Error(`serve exited ${f.code ?? f.signal} before listening: ${f.stderr}`));
    });
  });
  return {
    child,
    url,
    stderr: () => stderr,
    done,
    stop: async () => {
      child.kill('SIGTERM');
      return done;
    },
  };
}

export interface Reply {
  status: number;
  body: any;
}

/** POSTs a webhook event signed with `secret` (timestamp: now unless given). */
export async function postHook(url: string, bindingId: string, body: string, options: { secret?: string; timestamp?: number; signature?: string; eventId?: string; contentType?: string } = {}): Promise<Reply> {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const headers: Record<string, string> = { 'content-type': options.contentType ?? 'application/json', 'x-adw-timestamp': String(timestamp) };
  if (options.secret !== undefined || options.signature !== undefined) headers['x-adw-signature'] = options.signature ?? signWebhook(options.secret!, timestamp, body);
  if (options.eventId !== undefined) headers['x-adw-event-id'] = options.eventId;
  const res = await request(`${url}/v1/hooks/${bindingId}`, { method: 'POST', headers, body });
  return { status: res.statusCode, body: await res.body.json() };
}

let lastDingtalkTimestamp = 0;

/** POSTs a DingTalk robot callback signed with `appSecret` (timestamp: now, a new one each call, as each sign is usable once). */
export async function postDingtalk(url: string, bindingId: string, message: Record<string, unknown>, options: { appSecret: string; timestamp?: number; sign?: string }): Promise<Reply> {
  const timestamp = options.timestamp ?? (lastDingtalkTimestamp = Math.max(Date.now(), lastDingtalkTimestamp + 1));
  const res = await request(`${url}/v1/dingtalk/${bindingId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', timestamp: String(timestamp), sign: options.sign ?? signDingtalk(options.appSecret, timestamp) },
    body: JSON.stringify(message),
  });
  return { status: res.statusCode, body: await res.body.json() };
}

export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

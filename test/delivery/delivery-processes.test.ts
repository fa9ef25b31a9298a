// Result delivery across real processes: two `serve` workers on one store (SQLite file, then a
// PostgreSQL schema) never send one delivery twice, and a worker killed (SIGKILL) in the middle
// of a send leaves the delivery to the next worker, which sends it once its claim expires. The
// receiver's log is the oracle.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, cliMain } from '../helpers/cli.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';
import { assertPostgresReachable, pgUrl } from '../helpers/postgres.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const gate = chain('gated', [{ id: 'gate', uses: 'human.approval@1', config: { prompt: 'deploy?' } }], { requires: ['approval'] });
const quick = chain('quick', []);

async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface Serving {
  child: ChildProcess;
  stderr(): string;
  exited: Promise<number | null>;
}

const children: ChildProcess[] = [];
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** `agent-workflow serve` on a store; resolves once it printed `Serving`. */
async function serve(storeArgs: string[], extra: string[] = []): Promise<Serving> {
  const child = spawn(process.execPath, [cliMain, 'serve', ...storeArgs, '--delivery-lease-ms', '3000', '--delivery-timeout-ms', '2000', '--delivery-backoff-ms', '50', ...extra], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  await until('serve to start', () => stdout.includes('"kind":"Serving"') || (child.exitCode !== null && Promise.reject(new Error(`serve exited: ${stderr}`))));
  return { child, stderr: () => stderr, exited };
}

async function stop(s: Serving): Promise<void> {
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}

async function twoWorkersSendOnce(storeArgs: string[], runtimeStore: { dir?: string; store?: string }): Promise<void> {
  const hook = await new WebhookReceiver().start();
  cleanup.push(() => hook.close());
  // A slow receiver: a second sender holding the same delivery would send it within this window.
  hook.slow(150);
  const a = await serve(storeArgs);
  const b = await serve(storeArgs);
  const rt = await openRuntime({ ...runtimeStore, log: () => undefined });
  const runIds: string[] = [];
  try {
    for (let i = 0; i < 16; i++) runIds.push((await rt.launch(quick, { executionMode: 'background', delivery: { kind: 'webhook', url: hook.url } })).runId);
    await until('16 deliveries', () => hook.counts().size === 16, 60_000);
    // Time for a duplicate to arrive, were there one (several poll rounds of both workers).
    await new Promise((r) => setTimeout(r, 1500));
    await stop(a);
    await stop(b);
    expect([...hook.counts().values()].every((n) => n === 1), JSON.stringify([...hook.counts()])).toBe(true);
    expect(hook.accepted.map((r) => r.body.runId).sort()).toEqual([...runIds].sort());
    const records = await rt.deliveries.list({ limit: 100 });
    expect(records.filter((d) => d.state === 'delivered' && d.attempts === 1)).toHaveLength(16);
  } finally {
    await rt.close();
  }
}

describe('result delivery with serve processes', () => {
  it('two workers on one SQLite file send each of 16 deliveries exactly once', async () => {
    const dir = tempDir();
    await twoWorkersSendOnce(['--dir', dir], { dir });
  }, 120_000);

  it('two workers on one PostgreSQL schema send each of 16 deliveries exactly once', async () => {
    await assertPostgresReachable();
    const schema = `deliv_two_${process.pid}`;
    const admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    cleanup.push(async () => {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    });
    const store = `${pgUrl}?schema=${schema}`;
    await twoWorkersSendOnce(['--store', store], { store });
  }, 120_000);

  it('a worker killed mid-send: after a restart each phase (approval, end) is delivered exactly once', async () => {
    const hook = await new WebhookReceiver('kill-secret').start();
    cleanup.push(() => hook.close());
    const dir = tempDir();
    const file = join(dir, 'gate.json');
    writeFileSync(file, JSON.stringify(gate));
    // The workers read the secret from their environment (inherited from this process).
    process.env.HOOK_SECRET = 'kill-secret';
    cleanup.push(async () => void delete process.env.HOOK_SECRET);

    // The run pauses for its approval in a CLI process that sends nothing and exits.
    const started = await runCli(['run', file, '--dir', dir, '--deliver-to', `webhook:${hook.url}`, '--deliver-secret-env', 'HOOK_SECRET']);
    expect(started.code).toBe(4);
    const runId = started.out[started.out.length - 1].runId as string;

    // A worker claims the approval delivery; the receiver holds the request; the worker dies.
    hook.hold();
    const first = await serve(['--dir', dir]);
    await until('the held send', () => hook.heldCount === 1);
    first.child.kill('SIGKILL');
    await first.exited;
    const mid = await runCli(['deliveries', 'list', '--run', runId, '--dir', dir]);
    expect(mid.out[0].deliveries).toMatchObject([{ phase: 'approval:gate', state: 'pending', attempts: 1 }]);
    hook.release();
    expect(hook.accepted).toEqual([]);

    // A new worker takes the delivery over once the dead one's claim expired.
    const second = await serve(['--dir', dir]);
    await until('the approval delivery', () => hook.accepted.length === 1);
    const approved = await runCli(['approve', runId, 'gate', '--by', 'carol', '--dir', dir]);
    expect(approved.code).toBe(0);
    await until('the end delivery', () => hook.accepted.length === 2);
    await new Promise((r) => setTimeout(r, 1000));
    await stop(second);

    expect(hook.badSignatures).toEqual([]);
    expect(hook.accepted.map((r) => r.body.phase)).toEqual(['approval:gate', 'ended']);
    expect([...hook.counts().values()]).toEqual([1, 1]);
    const after = await runCli(['deliveries', 'list', '--run', runId, '--dir', dir]);
    expect(after.out[0].deliveries.map((d: any) => [d.phase, d.state, d.attempts]).sort()).toEqual([
      ['approval:gate', 'delivered', 2],
      ['ended', 'delivered', 1],
    ]);
  }, 120_000);
});

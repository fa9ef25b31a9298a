import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { CommitEntry } from '../../hosts/core/store.js';
import { routerNodeFlags } from '../../dist/hosts/router/memory-flags.js';

/** The Node flags a router runs with (hosts/router/memory-flags.ts): started with them, it runs in place. */
export const memoryFlags: readonly string[] = routerNodeFlags;

export function tempDir(prefix = 'router-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export const utf8 = (text: string): Uint8Array => Buffer.from(text, 'utf8');
export const text = (bytes: Uint8Array | undefined): string | undefined => bytes && Buffer.from(bytes).toString('utf8');

export function eventLine(runId: string, seq: number): string {
  return JSON.stringify({ runId, seq, type: 'node.completed', payload: `event ${seq} of ${runId}` });
}

/** Events `from..=to` of `runId`, one per line. */
export function eventLines(runId: string, from: number, to: number): string[] {
  const out: string[] = [];
  for (let seq = from; seq <= to; seq++) out.push(eventLine(runId, seq));
  return out;
}

/** A commit entry appending `count` events after `expectedSeq`. */
export function entry(
  runId: string,
  expectedSeq: number,
  count: number,
  extra: { plan?: string; checkpoint?: string; status?: string } = {},
): CommitEntry {
  const lastSeq = expectedSeq + count;
  const e: CommitEntry = {
    runId,
    expectedSeq,
    lastSeq,
    events: utf8(eventLines(runId, expectedSeq + 1, lastSeq).join('\n')),
    status: extra.status ?? 'running',
  };
  if (extra.plan !== undefined) e.plan = utf8(extra.plan);
  if (extra.checkpoint !== undefined) e.checkpoint = utf8(extra.checkpoint);
  return e;
}

/** A fixed-step clock, so createdAt/updatedAt are predictable. */
export function stepClock(start = 1_700_000_000_000): () => number {
  let now = start;
  return () => (now += 1000);
}

/** Lines of a side file that tools append to (empty when it does not exist yet). */
export function fileLines(file: string): string[] {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Polls `condition` every 5 ms; throws after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * A child of this process's cgroup v1 memory group with `limitBytes` (the controller lets a
 * process create one under its own, /proc/self/cgroup names it), or why there is none.
 */
export function childMemoryCgroup(name: string, limitBytes: number): { dir?: string; reason?: string } {
  const line = fs.readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  if (!line) return { reason: 'no cgroup v1 memory controller in /proc/self/cgroup' };
  const own = line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1);
  const dir = path.join('/sys/fs/cgroup/memory', own, `${name}-${process.pid}`);
  try {
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limitBytes));
    return { dir };
  } catch (err) {
    try {
      fs.rmdirSync(dir);
    } catch {
      // never created
    }
    return { reason: `cannot create a child memory cgroup at ${dir}: ${(err as Error).message}` };
  }
}

/** What a memory cgroup recorded: peak usage, failcnt, OOM kills. */
export function cgroupMemory(dir: string): { peakBytes: number; failcnt: number; oomKill: number | undefined; underOom: number } {
  const read = (name: string) => fs.readFileSync(path.join(dir, name), 'utf8').trim();
  const oom = Object.fromEntries(read('memory.oom_control').split('\n').map((l) => l.split(' ')).map(([k, v]) => [k, Number(v)]));
  return { peakBytes: Number(read('memory.max_usage_in_bytes')), failcnt: Number(read('memory.failcnt')), oomKill: oom.oom_kill, underOom: oom.under_oom ?? 0 };
}

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Runs `agent-workflow <args>` (the built Node CLI) to its exit; stdout's JSON lines, parsed. */
export function operatorCli(args: string[]): Promise<{ code: number | null; lines: any[] }> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'dist/hosts/node/cli/main.js'), ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout!.on('data', (c) => (stdout += c));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, lines: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)) })));
}

/** Whether a process is alive (not gone, not a zombie). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}

/**
 * Starts `command` inside the memory cgroup `dir` from its first byte: a shell puts itself into
 * the group, then execs the command (a re-executed router child included).
 */
export function spawnInCgroup(dir: string, command: string[], stdio: StdioOptions = ['ignore', 'pipe', 'pipe']): ChildProcess {
  return spawn('/bin/sh', ['-c', 'echo $$ > "$CG/cgroup.procs" && exec "$@"', 'sh', ...command], { env: { ...process.env, CG: dir }, stdio });
}

/** Runs `command` inside the memory cgroup `dir` to its exit; its exit code and output. */
export function runInCgroup(dir: string, command: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnInCgroup(dir, command);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

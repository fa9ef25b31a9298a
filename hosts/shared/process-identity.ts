/**
 * Process identity on Linux: a pid is only meaningful together with the process's start time
 * (field 22 of /proc/<pid>/stat, clock ticks since boot) and the boot id, because pids are reused
 * and the tick counter restarts at every boot.
 */
import * as fs from 'node:fs';

export interface ProcessIdentity {
  pid: number;
  /** Field 22 of /proc/<pid>/stat, kept as decimal text (it is a 64-bit counter). */
  startTicks: string;
  bootId: string;
}

/** What is at a pid right now. */
export type ProcessObservation =
  | { kind: 'absent' }
  | { kind: 'present'; startTicks: string; zombie: boolean }
  | { kind: 'unverifiable'; reason: string };

export function readBootId(): string | undefined {
  try {
    const id = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return id.length > 0 ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Parses /proc/<pid>/stat text; the command name (field 2) may hold spaces and parentheses. */
export function parseProcStat(text: string): { state: string; startTicks: string } | undefined {
  const close = text.lastIndexOf(')');
  if (close === -1) return undefined;
  // Fields from 3 on, separated by single spaces; field 3 is index 0, field 22 is index 19.
  const fields = text.slice(close + 2).trim().split(' ');
  const state = fields[0];
  const startTicks = fields[19];
  if (state === undefined || startTicks === undefined || !/^\d+$/.test(startTicks)) return undefined;
  return { state, startTicks };
}

export function observeProcess(pid: number): ProcessObservation {
  if (!Number.isInteger(pid) || pid <= 0) return { kind: 'unverifiable', reason: `bad pid ${pid}` };
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ESRCH') {
      // Without a /proc at all, absence proves nothing.
      return fs.existsSync('/proc/self/stat') ? { kind: 'absent' } : { kind: 'unverifiable', reason: 'no /proc' };
    }
    return { kind: 'unverifiable', reason: `cannot read /proc/${pid}/stat: ${code ?? String(error)}` };
  }
  const stat = parseProcStat(text);
  if (!stat) return { kind: 'unverifiable', reason: `cannot parse /proc/${pid}/stat` };
  return { kind: 'present', startTicks: stat.startTicks, zombie: stat.state === 'Z' || stat.state === 'X' };
}

/** The identity of a live process, or `undefined` when it cannot be read. */
export function identifyProcess(pid: number, bootId = readBootId()): ProcessIdentity | undefined {
  const seen = observeProcess(pid);
  if (seen.kind !== 'present' || bootId === undefined) return undefined;
  return { pid, startTicks: seen.startTicks, bootId };
}

/**
 * True only when the process `identity` names is provably gone: an earlier boot, no process at its
 * pid, a zombie, or the pid reused by another process. A process that cannot be looked up (no
 * boot id, an unreadable /proc entry) is not gone: what it holds stays held.
 */
export function isProvablyGone(identity: ProcessIdentity, bootId = readBootId()): boolean {
  if (bootId === undefined) return false;
  if (bootId !== identity.bootId) return true;
  const seen = observeProcess(identity.pid);
  if (seen.kind === 'unverifiable') return false;
  return seen.kind === 'absent' || seen.zombie || seen.startTicks !== identity.startTicks;
}

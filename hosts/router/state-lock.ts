/**
 * One process owns a state directory. The `LOCK` file names its owner by process identity; a
 * lock whose owner is provably gone (other boot, pid absent or reused) is taken over; one whose
 * owner cannot be looked up is not. Node has no flock, and a router runs a single host, so this
 * guards against a second start by mistake, not against a race of two starts in the same
 * millisecond.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { StoreError } from '../core/store.js';
import { identifyProcess, isProvablyGone, type ProcessIdentity } from '../shared/process-identity.js';
import { fsyncDir } from './record-file.js';

export interface StateLock {
  release(): void;
}

export function acquireStateLock(dir: string): StateLock {
  const file = path.join(dir, 'LOCK');
  const me = identifyProcess(process.pid);
  const content = JSON.stringify(me ?? { pid: process.pid });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, content, { flag: 'wx' });
      fsyncDir(dir);
      return { release: () => releaseLock(file, content) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new StoreError('store.io', `cannot create ${file}: ${(error as Error).message}`);
      }
    }
    const holder = readHolder(file);
    if (holder && !isProvablyGone(holder)) {
      throw new StoreError('store.io', `state directory ${dir} is in use by process ${holder.pid} (remove ${file} only if no such process uses it)`);
    }
    if (!holder && fs.existsSync(file)) {
      // An unreadable lock (e.g. written without /proc): only its own process may remove it.
      const raw = safeRead(file);
      if (raw !== undefined && raw.includes(`"pid":${process.pid}`)) {
        throw new StoreError('store.io', `state directory ${dir} is already open in this process`);
      }
    }
    fs.rmSync(file, { force: true });
  }
  throw new StoreError('store.io', `cannot take the lock ${file}`);
}

function readHolder(file: string): ProcessIdentity | undefined {
  const raw = safeRead(file);
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<ProcessIdentity>;
    if (typeof v.pid === 'number' && typeof v.startTicks === 'string' && typeof v.bootId === 'string') {
      return { pid: v.pid, startTicks: v.startTicks, bootId: v.bootId };
    }
  } catch {
    // A torn lock file: its writer died while creating it.
  }
  return undefined;
}

function safeRead(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function releaseLock(file: string, content: string): void {
  if (safeRead(file) === content) fs.rmSync(file, { force: true });
}

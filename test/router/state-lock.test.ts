// The state directory's LOCK: taken over only from a process that is provably gone.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireStateLock } from '../../dist/hosts/router/state-lock.js';
import { identifyProcess, readBootId } from '../../dist/hosts/shared/process-identity.js';

function lockedDir(holder: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'adw-lock-'));
  writeFileSync(join(dir, 'LOCK'), JSON.stringify(holder));
  return dir;
}

describe('acquireStateLock', () => {
  it('refuses a directory held by a live process, and one whose holder cannot be looked up', () => {
    const self = identifyProcess(process.pid)!;
    expect(() => acquireStateLock(lockedDir(self))).toThrow(/in use by process/);
    // A pid that /proc cannot answer for proves nothing: the directory stays held.
    expect(() => acquireStateLock(lockedDir({ pid: -1, startTicks: self.startTicks, bootId: self.bootId }))).toThrow(expect.objectContaining({ code: 'store.io' }));
  });

  it('takes over a directory whose holder has exited or belongs to an earlier boot', () => {
    const child = spawnSync(process.execPath, ['-e', 'console.log(require("fs").readFileSync("/proc/self/stat","utf8"))'], { encoding: 'utf8' });
    const startTicks = child.stdout.slice(child.stdout.lastIndexOf(')') + 2).split(' ')[19];
    const gone = acquireStateLock(lockedDir({ pid: child.pid, startTicks, bootId: readBootId() }));
    gone.release();
    const earlierBoot = acquireStateLock(lockedDir({ pid: process.pid, startTicks, bootId: 'an-earlier-boot' }));
    earlierBoot.release();
  });
});

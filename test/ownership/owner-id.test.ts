// Which lease owners count as dead at once (instead of after their lease's lifetime): only a
// process of this machine that is provably gone. A process that cannot be looked up is alive.
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { newOwnerId, ownerIsDead } from '../../dist/hosts/node/stores/owner-id.js';
import { identifyProcess, readBootId } from '../../dist/hosts/shared/process-identity.js';

const host = hostname().replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64);

describe('ownerIsDead', () => {
  it('is false for this process and true for one that has exited', () => {
    expect(ownerIsDead(newOwnerId())).toBe(false);
    const child = spawnSync(process.execPath, ['-e', 'console.log(require("fs").readFileSync("/proc/self/stat","utf8"))'], { encoding: 'utf8' });
    const fields = child.stdout.slice(child.stdout.lastIndexOf(')') + 2).split(' ');
    const gone = [host, String(child.pid), fields[19], readBootId()!.slice(0, 8), 'abcd1234'].join('/');
    expect(ownerIsDead(gone)).toBe(true);
  });

  it('is true for a pid now used by another process (its start time differs)', () => {
    const self = identifyProcess(process.pid)!;
    const reused = [host, String(process.pid), String(BigInt(self.startTicks) + 1n), self.bootId.slice(0, 8), 'abcd1234'].join('/');
    expect(ownerIsDead(reused)).toBe(true);
  });

  it('is false when the process cannot be looked up, another host, or another shape of id', () => {
    const self = identifyProcess(process.pid)!;
    expect(ownerIsDead([host, 'not-a-pid', self.startTicks, self.bootId.slice(0, 8), 'abcd1234'].join('/'))).toBe(false);
    expect(ownerIsDead(['some-other-host', '1', self.startTicks, self.bootId.slice(0, 8), 'abcd1234'].join('/'))).toBe(false);
    expect(ownerIsDead('worker-a')).toBe(false);
  });
});

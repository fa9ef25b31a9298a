// Owner ids of the processes that hold run leases. An owner id names the process it belongs to
// (host name, pid, process start time, boot id), so that on the same machine a lease whose
// process is provably gone counts as expired at once instead of after its time-to-live: a
// SIGKILLed `resume` does not block the next one for the lease's whole lifetime.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { identifyProcess, isProvablyGone, readBootId } from '../../shared/process-identity.js';

const separator = '/';

/** `<host>/<pid>/<start ticks>/<boot id prefix>/<random>`; the random part tells kernels of one process apart. */
export function newOwnerId(): string {
  const self = identifyProcess(process.pid);
  const host = hostname().replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64) || 'host';
  const random = randomBytes(4).toString('hex');
  if (!self) return [host, String(process.pid), '0', 'unknown', random].join(separator);
  return [host, String(self.pid), self.startTicks, self.bootId.slice(0, 8), random].join(separator);
}

/**
 * True when `owner` names a process of this machine that is provably not running any more.
 * Anything that cannot be proven (another host, no /proc, an id of another shape) is not dead:
 * the lease then lasts until it expires.
 */
export function ownerIsDead(owner: string): boolean {
  const parts = owner.split(separator);
  if (parts.length !== 5) return false;
  const [host, pid, startTicks, bootPrefix] = parts;
  if (host !== hostname().replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64)) return false;
  const bootId = readBootId();
  if (!bootId || startTicks === '0') return false;
  if (!bootId.startsWith(bootPrefix)) return true;
  return isProvablyGone({ pid: Number(pid), startTicks, bootId }, bootId);
}

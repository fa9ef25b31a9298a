// Which hosts a delivery may reach. A run's delivery target is chosen by whoever launches it
// (SDK, binding, MCP), so without a check the process would POST run results to its own loopback
// services or to a cloud metadata endpoint (169.254.169.254) on their behalf. Non-public
// addresses are refused by default, twice: when a target enters (a literal IP or `localhost` in
// its URL), and at connect time on the address DNS answered (a public name may resolve to a
// private address, or change between the two checks). Redirects are never followed.
//
// An operator permits exceptions with `ADW_DELIVERY_ALLOW_TARGETS`: a comma-separated list of
// `host:port` or `host` entries (e.g. `127.0.0.1:8080,hooks.internal`), matched against the URL's
// host and against the resolved address.
import type { BlockList } from 'node:net';
import { WorkflowError } from '../sdk/errors.js';

// node:net and node:dns are loaded with the first check: most processes never name a target.
const net = (): typeof import('node:net') => process.getBuiltinModule('node:net') as typeof import('node:net');
const isIP = (ip: string): number => net().isIP(ip);
let blockedList: BlockList | undefined;
function blockedRanges(): BlockList {
  if (blockedList) return blockedList;
  const blocked = new (net().BlockList)();
  for (const [range, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
  ] as const) blocked.addSubnet(range, bits, 'ipv4');
  for (const [range, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['2001:db8::', 32]] as const) blocked.addSubnet(range, bits, 'ipv6');
  return (blockedList = blocked);
}

/** True when `ip` is an address on the public internet (not loopback, private, link-local, CGNAT, …). */
export function isPublicAddress(ip: string): boolean {
  const v = isIP(ip);
  if (v === 4) return !blockedRanges().check(ip, 'ipv4');
  if (v !== 6) return false;
  const lower = ip.toLowerCase();
  // An IPv4-mapped or -compatible IPv6 address reaches the IPv4 host it embeds.
  const mapped = /^(?:0{0,4}:){0,5}(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/.exec(lower.replace(/^::/, ''));
  if (mapped && lower.startsWith('::')) return isPublicAddress(mapped[1]!);
  const hexMapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hexMapped) {
    const hi = parseInt(hexMapped[1]!, 16);
    const lo = parseInt(hexMapped[2]!, 16);
    return isPublicAddress(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`);
  }
  return !blockedRanges().check(ip, 'ipv6');
}

/**
 * Entries the open runtimes of this process added (`delivery.allowTargets`), each counted once
 * per runtime that added it. Process-wide, like the environment variable they extend: every
 * launch and send of the process checks against both.
 */
const addedTargets = new Map<string, number>();

const targetEntry = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+|[0-9a-f:]+)(:\d{1,5})?$/;

/** Adds a runtime's `delivery.allowTargets` to this process's allow-list; the function returned takes them back. */
export function addAllowedTargets(entries: readonly unknown[]): () => void {
  const list = entries.map((e) => (typeof e === 'string' ? e.trim().toLowerCase() : e));
  for (const e of list) {
    if (typeof e !== 'string' || !targetEntry.test(e)) throw new WorkflowError('delivery.bad-option', `delivery allowTargets entries are host or host:port, not ${JSON.stringify(e)}`);
  }
  for (const e of list as string[]) addedTargets.set(e, (addedTargets.get(e) ?? 0) + 1);
  let taken = false;
  return () => {
    if (taken) return;
    taken = true;
    for (const e of list as string[]) {
      const n = (addedTargets.get(e) ?? 1) - 1;
      if (n > 0) addedTargets.set(e, n);
      else addedTargets.delete(e);
    }
  };
}

/** The allow-list of this process: `ADW_DELIVERY_ALLOW_TARGETS` and its runtimes' `delivery.allowTargets`, lower-cased. */
export function allowedTargets(env: NodeJS.ProcessEnv = process.env): string[] {
  return [...(env.ADW_DELIVERY_ALLOW_TARGETS ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s.length > 0), ...addedTargets.keys()];
}

function bare(host: string): string {
  return host.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
}

function allowed(host: string, port: string, allow: readonly string[]): boolean {
  const h = bare(host);
  return allow.some((a) => {
    const m = /^(\[[^\]]+\]|[^:]+|[0-9a-f:]+)(?::(\d+))?$/.exec(a);
    if (!m) return false;
    const ah = bare(m[1]!);
    return ah === h && (m[2] === undefined || m[2] === port);
  });
}

function portOf(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : '80');
}

/**
 * Refuses a target URL whose host is a non-public literal address or `localhost` (the URL parser
 * has already turned decimal, octal and hex IPv4 spellings into dotted form).
 */
export function checkTargetHost(url: URL, field: string, allow: readonly string[] = allowedTargets()): void {
  const host = bare(url.hostname);
  if (allowed(host, portOf(url), allow)) return;
  const isLocalName = host === 'localhost' || host.endsWith('.localhost') || host === 'localhost.localdomain';
  if (isLocalName || (isIP(host) !== 0 && !isPublicAddress(host))) {
    throw new WorkflowError('launch.delivery-target-refused', `delivery.${field} points at ${host}, a non-public address; deliveries reach only public addresses unless ADW_DELIVERY_ALLOW_TARGETS or the runtime's delivery.allowTargets lists the host (see docs/triggers.md, "Which targets a delivery may reach")`);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void;

/**
 * A `lookup` for undici's connector: resolves as usual, then refuses an answer that is not public
 * (unless the resolved address, or the name with its port, is allowed).
 */
export function guardedLookup(port: string, allow: readonly string[]) {
  return (hostname: string, options: Record<string, unknown>, callback: LookupCallback): void => {
    (process.getBuiltinModule('node:dns') as typeof import('node:dns')).lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const list = addresses as { address: string; family: number }[];
      const nameAllowed = allowed(hostname, port, allow);
      const refused = list.find((a) => !nameAllowed && !allowed(a.address, port, allow) && !isPublicAddress(a.address));
      if (refused) {
        const e = new Error(`delivery.target-refused: ${hostname} resolved to ${refused.address}, a non-public address`) as NodeJS.ErrnoException;
        e.code = 'ADW_TARGET_REFUSED';
        return callback(e, []);
      }
      if (options.all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

// Shared helpers for the benchmark runner and the system modules.
import { createRequire } from 'node:module';
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createServer } from 'node:net';
import v8 from 'node:v8';

export const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const PEERS_DIR = join(BENCH_DIR, 'peers');
export const ROOT_DIR = resolve(BENCH_DIR, '..');

const peerRequire = createRequire(join(PEERS_DIR, 'package.json'));

/** Directory of an installed peer package (bench/peers/node_modules/<name>), or throws. */
export function peerPackageDir(name) {
  // Resolve package.json through the node_modules walk; exports maps may hide it, so search by hand.
  for (const p of peerRequire.resolve.paths(name) ?? []) {
    const dir = join(p, name);
    if (existsSync(join(dir, 'package.json'))) return dir;
  }
  throw new Error(`peer package ${name} is not installed (run: npm --prefix bench/peers ci)`);
}

/** Exact installed version of a peer package, read from its package.json. */
export function peerVersion(name) {
  return JSON.parse(readFileSync(join(peerPackageDir(name), 'package.json'), 'utf8')).version;
}

/** Import a package installed in bench/peers (ESM entry if it has one). */
export async function importPeer(specifier) {
  let resolved;
  try {
    resolved = peerRequire.resolve(specifier);
  } catch (e) {
    throw new Error(`cannot resolve ${specifier} from bench/peers (run: npm --prefix bench/peers ci): ${e.message}`);
  }
  // require.resolve picks the "require" condition; prefer the "import" one when the package has it.
  const pkgName = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
  const sub = '.' + specifier.slice(pkgName.length);
  try {
    const dir = peerPackageDir(pkgName);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const entry = pkg.exports?.[sub] ?? (sub === '.' ? pkg.exports : undefined);
    const pick = (e) => (typeof e === 'string' ? e : e?.import ? pick(e.import) : e?.default ? pick(e.default) : e?.node ? pick(e.node) : undefined);
    const esm = entry && pick(entry);
    if (esm) resolved = join(dir, esm);
  } catch { /* fall back to the require-resolved file */ }
  return import(pathToFileURL(resolved).href);
}

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Run `fn(i)` for i in [0, n) with at most `limit` in flight (sliding window). */
export async function pool(n, limit, fn) {
  let next = 0;
  const lanes = [];
  for (let l = 0; l < Math.min(limit, n); l++) {
    lanes.push((async () => {
      while (next < n) await fn(next++);
    })());
  }
  await Promise.all(lanes);
}

/**
 * On-CPU time of this process's main thread (the event loop) in ms, from Linux's
 * /proc/self/task/<pid>/schedstat (nanoseconds); `undefined` where the platform has no such file.
 * V8's background threads (compilers, garbage-collection helpers) are not in it.
 */
export function mainThreadCpuMs() {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return undefined;
  }
}

/** Summary statistics of a list of numbers. */
export function stats(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const q = (p) => v[Math.min(v.length - 1, Math.max(0, Math.ceil(p * v.length) - 1))];
  return { n: v.length, median: q(0.5), p99: q(0.99), min: v[0], max: v[v.length - 1] };
}

export function withTimeout(promise, ms, what) {
  let t;
  return Promise.race([
    promise.finally(() => clearTimeout(t)),
    new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what} timed out after ${ms} ms`)), ms); t.unref?.(); }),
  ]);
}

/** The number after `--<name>` on the command line, else `dflt`. */
export function numberArg(name, dflt) {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : dflt;
}

/**
 * The JavaScript heap in use after two full collections (the process must run with
 * `--expose-gc`; a script that measures with it checks `canCollect()` first).
 */
export function usedHeapAfterGc() {
  globalThis.gc();
  globalThis.gc();
  return v8.getHeapStatistics().used_heap_size;
}

/** Whether the process was started with `--expose-gc`. */
export const canCollect = () => typeof globalThis.gc === 'function';


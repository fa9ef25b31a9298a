// Restate: restate-server (binary shipped in the npm package) on loopback, a Node SDK endpoint in
// this process, invocations through the ingress with the typed client. Default single-node
// configuration: every journal entry is appended to the server's log before it is acknowledged.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { importPeer, peerVersion, peerPackageDir, freePort, sleep, PEERS_DIR } from '../lib/util.mjs';

// The SDK 1.17 uses Promise.withResolvers (ES2024, Node 22); Node 20 lacks it, so add the
// standard definition when it is missing.
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers() {
    let resolve, reject;
    const promise = new this((res, rej) => { resolve = res; reject = rej; });
    return { promise, resolve, reject };
  };
}

process.env.RESTATE_LOGGING ??= 'ERROR';

let restate, clients, server, endpointServer, ingress, svc, ports, serverLog = '';

function serverBinary() {
  const req = createRequire(join(PEERS_DIR, 'package.json'));
  return req.resolve(`@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`);
}

async function waitFor(url, ms) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      const r = await fetch(url);
      if (r.ok) return;
      last = `HTTP ${r.status}`;
    } catch (e) { last = e.message; }
    if (server?.exitCode != null) throw new Error(`restate-server exited ${server.exitCode}: ${serverLog.slice(-800)}`);
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${url}: ${last}; log: ${serverLog.slice(-800)}`);
}

async function start(baseDir) {
  restate = await importPeer('@restatedev/restate-sdk');
  clients = await importPeer('@restatedev/restate-sdk-clients');
  const dir = baseDir ?? mkdtempSync(join(tmpdir(), 'bench-restate-'));
  ports = { ingress: await freePort(), admin: await freePort(), fabric: await freePort(), endpoint: await freePort() };
  server = spawn(serverBinary(), ['--no-logo', '--base-dir', join(dir, 'restate-data'), '--node-name', 'bench'], {
    env: {
      ...process.env,
      RESTATE_LISTEN_MODE: 'tcp',
      RESTATE_BIND_ADDRESS: `127.0.0.1:${ports.fabric}`,
      RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${ports.fabric}`,
      RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ports.ingress}`,
      RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${ports.admin}`,
      RESTATE_DISABLE_TELEMETRY: 'true',
      RESTATE_LOG_FILTER: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (d) => { serverLog = (serverLog + d.toString()).slice(-8000); };
  server.stdout.on('data', keep);
  server.stderr.on('data', keep);
  const { RestatePromise } = restate;
  const noop = async () => 0;
  const fan = async (ctx, { items, concurrency }) => {
    let done = 0;
    for (let b = 0; b < items; b += concurrency) {
      const batch = [];
      for (let i = b; i < Math.min(items, b + concurrency); i++) batch.push(ctx.run('item', async () => i));
      done += (await RestatePromise.all(batch)).length;
    }
    return done;
  };
  svc = restate.service({
    name: 'bench',
    handlers: {
      twoStep: async (ctx) => { await ctx.run('a', noop); await ctx.run('b', noop); return 2; },
      chain: async (ctx, steps) => { for (let i = 0; i < steps; i++) await ctx.run(`s${i}`, noop); return steps; },
      fan,
    },
  });
  endpointServer = restate.endpoint().bind(svc);
  await endpointServer.listen(ports.endpoint);
  await waitFor(`http://127.0.0.1:${ports.admin}/health`, 60_000);
  await waitFor(`http://127.0.0.1:${ports.ingress}/restate/health`, 60_000).catch(() => {});
  // Register the endpoint (retry while the cluster finishes provisioning).
  const end = Date.now() + 60_000;
  for (;;) {
    const r = await fetch(`http://127.0.0.1:${ports.admin}/deployments`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uri: `http://127.0.0.1:${ports.endpoint}`, force: true }),
    }).catch((e) => ({ ok: false, status: e.message, text: async () => '' }));
    if (r.ok) break;
    if (Date.now() > end) throw new Error(`registering the endpoint failed: ${r.status} ${await r.text()}`);
    await sleep(50);
  }
  ingress = clients.connect({ url: `http://127.0.0.1:${ports.ingress}` }).serviceClient(svc);
  // The first calls can race the deployment's propagation to the partitions.
  for (let i = 0; ; i++) {
    try { await ingress.twoStep(); break; } catch (e) { if (i > 200) throw e; await sleep(50); }
  }
}

async function stop() {
  if (server && server.exitCode == null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await Promise.race([exited, sleep(15_000)]);
    if (server.exitCode == null && server.signalCode == null) server.kill('SIGKILL');
  }
  server = undefined;
  // The SDK's listen() keeps an HTTP/2 server open; the process exits through the runner.
}

function serverPeakRssMB() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch { return undefined; }
}

export default {
  name: 'restate',
  kind: 'peer',
  get version() {
    try {
      return `restate-server ${peerVersion('@restatedev/restate-server')}, @restatedev/restate-sdk ${peerVersion('@restatedev/restate-sdk')}, sdk-clients ${peerVersion('@restatedev/restate-sdk-clients')}`;
    } catch { return 'not installed'; }
  },
  durability: 'default single-node server config: journal entries appended to the replicated loglet (replication 1, RocksDB WAL with fsync) before ctx.run continues',
  notes: {
    twoStep: 'one service invocation through the HTTP ingress (request/response), two ctx.run steps',
    fanOut1000: 'one invocation, 1,000 ctx.run steps in batches of 10 (RestatePromise.all)',
    foreach10k: 'one invocation, 10,000 ctx.run steps in batches of 10; peak RSS is the Node host (SDK endpoint)',
    coldStart: 'fresh process: start restate-server on an empty base dir, SDK endpoint, register deployment, first 2-step run',
  },
  na: {
    replay10k: 'replay happens only inside the server on suspension/retry of an invocation; the public API has no way to replay a recorded invocation in isolation',
  },
  async setup(ctx) { await start(ctx.tmpDir); },
  async teardown() { await stop(); },
  workloads: {
    async twoStep() { await ingress.twoStep(); },
    async hundredStep({ steps }) { await ingress.chain(steps); },
    async fanOut1000(p) {
      const done = await ingress.fan(p);
      if (done !== p.items) throw new Error(`fan-out finished ${done}/${p.items}`);
    },
    async foreach10k(p) {
      const done = await ingress.fan(p);
      if (done !== p.items) throw new Error(`foreach finished ${done}/${p.items}`);
      return { extra: { serverPeakRssMB: serverPeakRssMB() } };
    },
    async coldStart(ctx) {
      const t0 = performance.now();
      await start(ctx.tmpDir);
      const ms = performance.now() - t0;
      await stop();
      return { ms };
    },
  },
};

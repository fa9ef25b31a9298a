// Which targets a delivery may reach: non-public addresses (loopback, private, link-local, CGNAT,
// ULA, IPv4-mapped, 0.0.0.0, any spelling of them, `localhost`) are refused where a target enters
// and again at connect time on the resolved address, unless ADW_DELIVERY_ALLOW_TARGETS lists
// them; a failed answer is stored as its status, length and digest, never its body.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkTargetHost, guardedLookup, isPublicAddress } from '../../dist/hosts/node/delivery/address.js';
import { deliveryTargetOf } from '../../dist/hosts/node/delivery/target.js';
import { allowDeliveryTarget } from '../helpers/delivery-allow.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';

const quick = chain('quick', []);
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** A loopback HTTP server that answers every request with `status` and `body`, and counts them. */
async function receiver(status: number, body: string): Promise<{ url: string; hostPort: string; hits: () => number }> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    hits++;
    req.resume();
    res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanup.push(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/hook`, hostPort: `127.0.0.1:${port}`, hits: () => hits };
}

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('delivery targets', () => {
  it('refuses every spelling of a non-public host with launch.delivery-target-refused, and accepts public ones', () => {
    const refused = [
      'http://127.0.0.1/', 'http://127.1.2.3:8080/', 'http://2130706433/', 'http://0x7f000001/', 'http://0177.0.0.1/', 'http://0x7f.1/',
      'http://localhost/', 'http://localhost./', 'http://LOCALHOST:80/', 'http://a.localhost/', 'http://169.254.169.254/latest/meta-data/', 'http://10.1.2.3/',
      'http://172.16.0.1/', 'http://172.31.255.255/', 'http://192.168.1.1/', 'http://100.64.0.1/', 'http://100.127.255.254/', 'http://0.0.0.0/',
      'http://[::1]/', 'http://[::]/', 'http://[fc00::1]/', 'http://[fd12:3456::1]/', 'http://[fe80::1]/', 'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:a9fe:a9fe]/', 'http://[::ffff:10.0.0.1]/',
    ];
    const codes = refused.map((url) => {
      try {
        deliveryTargetOf({ kind: 'webhook', url });
        return `${url} accepted`;
      } catch (e) {
        return (e as { code: string }).code;
      }
    });
    expect(codes).toEqual(refused.map(() => 'launch.delivery-target-refused'));
    expect(() => deliveryTargetOf({ kind: 'dingtalk', webhookUrl: 'http://169.254.169.254/robot/send?access_token=x' })).toThrow(/non-public/);
    expect(['8.8.8.8', '1.1.1.1', '100.128.0.1', '172.32.0.1', '2606:4700:4700::1111'].map(isPublicAddress)).toEqual([true, true, true, true, true]);
    expect(deliveryTargetOf({ kind: 'webhook', url: 'https://hooks.example.com/x' })).toEqual({ kind: 'webhook', url: 'https://hooks.example.com/x' });
    // The allow-list names a host and, optionally, its port.
    expect(() => checkTargetHost(new URL('http://127.0.0.1:8080/'), 'url', ['127.0.0.1:8080'])).not.toThrow();
    expect(() => checkTargetHost(new URL('http://127.0.0.1:8081/'), 'url', ['127.0.0.1:8080'])).toThrow(/non-public/);
    expect(() => checkTargetHost(new URL('http://localhost:9/'), 'url', ['localhost'])).not.toThrow();
  });

  it('checks the address DNS answers at connect time (a name that resolves to loopback is refused)', async () => {
    const lookupOf = (allow: string[]) =>
      new Promise<string>((resolve) => guardedLookup('80', allow)('localhost', {}, (err, address) => resolve(err ? `${(err as { code?: string }).code}` : String(address))));
    expect(await lookupOf([])).toBe('ADW_TARGET_REFUSED');
    expect(await lookupOf(['127.0.0.1'])).toMatch(/^(127\.0\.0\.1|::1)$/);
  });

  it('a loopback receiver not on the allow-list is refused at launch and receives nothing', async () => {
    const hook = await receiver(200, 'ok');
    const rt = await openRuntime({ dir: tempDir(), delivery: { backoffBaseMs: 1, pollMs: 20 } });
    cleanup.push(() => rt.close());
    await expect(rt.launch(quick, { delivery: { kind: 'webhook', url: hook.url } })).rejects.toMatchObject({ code: 'launch.delivery-target-refused' });
    rt.deliveries.start();
    await rt.deliveries.stop();
    expect(hook.hits()).toBe(0);
    expect(await rt.deliveries.list({})).toEqual([]);
  });

  it("a runtime's delivery.allowTargets lets its launches and sends reach that receiver while it is open, and no longer once closed", async () => {
    const hook = await receiver(200, 'ok');
    const rt = await openRuntime({ dir: tempDir(), delivery: { backoffBaseMs: 1, pollMs: 20, allowTargets: [hook.hostPort] } });
    const handle = await rt.launch(quick, { delivery: { kind: 'webhook', url: hook.url } });
    await handle.result;
    rt.deliveries.start();
    await until('the delivery', async () => (await rt.deliveries.list({ runId: handle.runId }))[0]?.state === 'delivered');
    await rt.deliveries.stop();
    expect(hook.hits()).toBe(1);
    await rt.close();
    // Taken back at close: another runtime of this process is refused the same receiver.
    const other = await openRuntime({ dir: tempDir() });
    cleanup.push(() => other.close());
    await expect(other.launch(quick, { delivery: { kind: 'webhook', url: hook.url } })).rejects.toMatchObject({ code: 'launch.delivery-target-refused' });
    await expect(openRuntime({ dir: tempDir(), delivery: { allowTargets: ['http://127.0.0.1/'] } })).rejects.toMatchObject({ code: 'delivery.bad-option' });
  });

  it("stores a failed answer's status, length and digest, never its body (not in the database nor its WAL)", async () => {
    const hook = await receiver(404, 'db_password=hunter2');
    allowDeliveryTarget(hook.hostPort);
    const dir = tempDir();
    const rt = await openRuntime({ dir, delivery: { backoffBaseMs: 1, pollMs: 20 } });
    cleanup.push(() => rt.close());
    const handle = await rt.launch(quick, { delivery: { kind: 'webhook', url: hook.url } });
    await handle.result;
    rt.deliveries.start();
    await until('the failed delivery', async () => (await rt.deliveries.list({ runId: handle.runId }))[0]?.state === 'dead');
    await rt.deliveries.stop();
    const [d] = await rt.deliveries.list({ runId: handle.runId });
    expect(d.lastError).toBe(`delivery.http-status: HTTP 404 (body 19 bytes, sha256:${createHash('sha256').update('db_password=hunter2').digest('hex')})`);
    expect(hook.hits()).toBe(1);
    const files = readdirSync(dir).filter((f) => /\.db(-wal)?$/.test(f));
    expect(files.sort()).toEqual(['workflow.db', 'workflow.db-wal']);
    for (const f of files) expect(readFileSync(join(dir, f)).includes('hunter2')).toBe(false);
  });
});

// What an unauthenticated caller can do to a `serve --http` process on loopback (SQLite and
// PostgreSQL): learn nothing of its configuration from a 503, hold no connection open with a
// trickled body, grow the ingress journal only to a bound; and a HEAD on an event stream answers.
import { connect } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { triggerLimits } from '../../hosts/node/limits.js';
import { pgUrl, testSchema } from '../helpers/postgres.js';
import { cliOk, echo, postHook, publishBinding, publishTemplate, serve, until, type Server, type World, world } from './helpers.js';

const secret = 'hygiene-secret-0123456789';
const schema = testSchema('adw_trig_hygiene');
const stores: [string, Record<string, string>][] = [
  ['SQLite', {}],
  ['PostgreSQL', { STORE: `${pgUrl}?schema=${schema}` }],
];

describe.each(stores)('webhook hygiene (%s)', (_name, storeEnv) => {
  let w: World;
  let s: Server;
  beforeAll(async () => {
    w = world({ HOOK_SECRET: secret, ...storeEnv });
    await publishTemplate(w, echo);
    await publishBinding(w, { id: 'hook', source: 'webhook', config: { secretRef: 'HOOK_SECRET' }, target: 'echo@1', input: { text: { pointer: '/body/text' } } });
    await publishBinding(w, { id: 'unset', source: 'webhook', config: { secretRef: 'SECRET_VARIABLE_NAME_XYZ' }, target: 'echo@1', input: { text: { literal: 'x' } } });
    s = await serve(w);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('a 503 for a missing secret names no environment variable; the server log does', async () => {
    const reply = await postHook(s.url, 'unset', '{}', { secret });
    expect(reply).toEqual({ status: 503, body: { error: { code: 'trigger.secret-missing', message: 'binding unset cannot verify requests: its secret is not configured on this server' } } });
    await until('the log line', () => s.stderr().includes('SECRET_VARIABLE_NAME_XYZ'));
  });

  it('closes a connection that sends its headers and then trickles the body', async () => {
    const socket = connect(Number(new URL(s.url).port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('POST /v1/hooks/hook HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{');
    let received = '';
    socket.on('data', (d) => (received += d));
    // The server may reset the connection while a byte is in flight: closure is what is asserted.
    socket.on('error', () => undefined);
    const trickle = setInterval(() => {
      if (!socket.destroyed && socket.writable) socket.write(' ');
    }, 500);
    try {
      await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    } finally {
      clearInterval(trickle);
    }
    expect(received.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
  }, 60_000);

  it('300 unsigned requests, 405s and bad encodings leave a bounded number of records, the newest kept', async () => {
    const before = (await cliOk(w, ['ingress', 'list', '--status', 'rejected', '--limit', '10000'])).records.length;
    for (let i = 0; i < 300; i++) await postHook(s.url, `nobody-${i}`, '{}');
    expect((await request(`${s.url}/v1/hooks/hook`, { method: 'PUT' })).statusCode).toBe(405);
    expect((await request(`${s.url}/v1/hooks/%E0%A4%A`, { method: 'POST', body: '{}' })).statusCode).toBe(400);
    const records = (await cliOk(w, ['ingress', 'list', '--status', 'rejected', '--limit', '10000'])).records;
    expect(before).toBeLessThan(10);
    expect(records).toHaveLength(triggerLimits.unverifiedRejectionsKeptMax);
    expect(records.slice(-3).map((r: any) => [r.bindingId, r.reasonCode])).toEqual([
      ['nobody-299', 'binding.not-found'],
      ['hook', 'http.method-not-allowed'],
      ['%E0%A4%A', 'http.bad-request'],
    ]);
  });

  it('answers a HEAD on an event stream with its headers', async () => {
    const body = JSON.stringify({ text: 'head' });
    const { body: accepted } = await postHook(s.url, 'hook', body, { secret });
    const res = await request(`${s.url}/v1/runs/${accepted.runId}/events`, { method: 'HEAD', headers: { accept: 'text/event-stream' } });
    expect([res.statusCode, res.headers['content-type']]).toEqual([200, 'text/event-stream; charset=utf-8']);
    expect(await res.body.text()).toBe('');
  });
});

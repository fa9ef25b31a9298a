// The DingTalk-shaped robot the delivery tests trust as their oracle: it takes what the robot API
// takes and refuses, with the API's errcodes, what the API refuses. Real HTTP on loopback.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dingtalkMessage, dingtalkSign } from '../../dist/hosts/node/delivery/send.js';
import { DingTalkRobot } from '../helpers/dingtalk-robot.js';

const secret = 'SECc0ffee';
let robot: DingTalkRobot;
beforeAll(async () => {
  robot = await new DingTalkRobot('token-1', secret).start();
});
afterAll(() => robot.close());

async function post(query: Record<string, string>, body: unknown, contentType = 'application/json'): Promise<{ status: number; answer: any }> {
  const url = new URL(`${robot.url}/robot/send`);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const res = await request(url, { method: 'POST', headers: { 'content-type': contentType }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.statusCode, answer: await res.body.json() };
}

const text = { msgtype: 'text', text: { content: 'hello' } };
const signed = (ts: number, key = secret) => ({ access_token: 'token-1', timestamp: String(ts), sign: dingtalkSign(key, String(ts)) });

describe('the DingTalk-shaped robot', () => {
  it('takes a signed text or markdown message with a fresh timestamp, and records it', async () => {
    const before = robot.messages.length;
    expect(await post(signed(Date.now()), text)).toEqual({ status: 200, answer: { errcode: 0, errmsg: 'ok' } });
    expect(await post(signed(Date.now() - 59 * 60_000), dingtalkMessage({ runId: 'r1', phase: 'ended', outcome: { status: 'completed', result: { n: 1 } } }, 'markdown'))).toMatchObject({ answer: { errcode: 0 } });
    expect(robot.messages.slice(before).map((m) => m.msgtype)).toEqual(['text', 'markdown']);
  });

  it('refuses a wrong token, a missing, wrong or stale signature, a bad body — each with the API errcode — and records none', async () => {
    const before = robot.messages.length;
    const now = Date.now();
    const cases: [Record<string, string>, unknown, number, string?][] = [
      [{ ...signed(now), access_token: 'other' }, text, 300001],
      [{ access_token: 'token-1' }, text, 310000],
      [signed(now, 'SECwrong'), text, 310000],
      [{ ...signed(now), sign: signed(now).sign.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) }, text, 310000],
      [signed(now - 61 * 60_000), text, 310000],
      [signed(now + 61 * 60_000), text, 310000],
      [signed(now), { msgtype: 'text', text: {} }, 40035],
      [signed(now), { msgtype: 'image', image: {} }, 40035],
      [signed(now), { msgtype: 'markdown', markdown: { title: 't' } }, 40035],
      [signed(now), 'not json', 43000],
      [signed(now), text, 43004, 'text/plain'],
    ];
    for (const [query, body, errcode, contentType] of cases) {
      const r = await post(query, body, contentType);
      expect([r.status, r.answer.errcode], JSON.stringify({ query, body })).toEqual([200, errcode]);
    }
    expect(robot.messages.length).toBe(before);
  });

  it('fails the next N valid messages when told to', async () => {
    robot.failNext(2);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await post(signed(Date.now()), text)).answer.errcode);
    expect(answers).toEqual([130101, 130101, 0]);
  });
});

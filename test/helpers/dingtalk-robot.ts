// A DingTalk-shaped custom robot on loopback: it checks every request the way the robot API
// documents it, and records the messages it accepted (the oracle of delivery tests).
//
// - POST /robot/send?access_token=<token>, `Content-Type: application/json`.
// - With a secret ("加签"): query `timestamp` (ms) within one hour of the server's clock, and
//   `sign` = URL-encoded base64 HMAC-SHA256 keyed by the secret over `timestamp + "\n" + secret`.
// - A JSON body whose `msgtype` is text, markdown, link, actionCard or feedCard, with that type's
//   required fields (text.content; markdown.title and markdown.text; …).
// - The answer is HTTP 200 with `{"errcode":0,"errmsg":"ok"}`, or a nonzero errcode saying why.
//
// `failNext(n)` makes the next n valid requests fail (errcode 130101 "send too fast", or HTTP
// 500); `hold()` keeps valid requests unanswered (neither accepted nor failed) until `release()`.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { allowDeliveryTarget } from './delivery-allow.js';

export interface RobotMessage {
  at: number;
  msgtype: string;
  body: any;
  /** The `x-adw-delivery-id` header the sender set. */
  deliveryId?: string;
}

const hourMs = 60 * 60 * 1000;
const bodyBytesMax = 20_000;

export class DingTalkRobot {
  readonly messages: RobotMessage[] = [];
  readonly rejected: { errcode: number; errmsg: string }[] = [];
  /** Valid requests answered with a failure because of `failNext`. */
  failed = 0;
  private failures: { left: number; mode: 'errcode' | 'http500' } = { left: 0, mode: 'errcode' };
  private held: ServerResponse[] | undefined;
  private server!: Server;
  url = '';

  constructor(
    readonly accessToken = 'robot-token',
    readonly secret: string | undefined = 'SEC0123456789abcdef',
    /** The robot's clock (tests move it to check the one-hour window). */
    readonly now: () => number = Date.now,
  ) {}

  /** The webhook URL a sender is given: the robot's send URL; its access token goes in an environment variable (accessTokenRef). */
  get webhookUrl(): string {
    return `${this.url}/robot/send`;
  }

  async start(options: { allowed?: boolean } = {}): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    // Deliveries reach loopback only when the operator allows it; a receiver started with
    // `allowed: false` is one the process must refuse to reach.
    if (options.allowed !== false) allowDeliveryTarget(`127.0.0.1:${(this.server.address() as AddressInfo).port}`);
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  failNext(n: number, mode: 'errcode' | 'http500' = 'errcode'): void {
    this.failures = { left: n, mode };
  }

  hold(): void {
    this.held = [];
  }

  /** Requests held so far (each is a valid request left unanswered). */
  get heldCount(): number {
    return this.held?.length ?? 0;
  }

  /** Ends holding; held requests are answered with a failure (their senders are gone or timed out). */
  release(): void {
    for (const res of this.held ?? []) if (!res.destroyed) res.destroy();
    this.held = undefined;
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private answer(res: ServerResponse, errcode: number, errmsg: string): void {
    if (errcode !== 0) this.rejected.push({ errcode, errmsg });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ errcode, errmsg }));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > bodyBytesMax) return this.answer(res, 460101, 'message too long');
      chunks.push(c as Buffer);
    }
    const url = new URL(req.url ?? '/', 'http://robot');
    if (req.method !== 'POST' || url.pathname !== '/robot/send') {
      res.writeHead(404).end();
      return;
    }
    if (url.searchParams.get('access_token') !== this.accessToken) return this.answer(res, 300001, 'token is not exist');
    if (this.secret !== undefined) {
      const timestamp = url.searchParams.get('timestamp');
      const sign = url.searchParams.get('sign');
      if (!timestamp || !sign || !/^[0-9]{13}$/.test(timestamp)) return this.answer(res, 310000, 'sign not match, more: [missing timestamp or sign]');
      if (Math.abs(this.now() - Number(timestamp)) > hourMs) return this.answer(res, 310000, 'sign not match, more: [timestamp is more than 1 hour from now]');
      // `searchParams.get` has undone the URL encoding: compare the base64 itself.
      const expected = Buffer.from(createHmac('sha256', this.secret).update(`${timestamp}\n${this.secret}`).digest('base64'));
      const given = Buffer.from(sign);
      if (expected.length !== given.length || !timingSafeEqual(expected, given)) return this.answer(res, 310000, 'sign not match');
    }
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return this.answer(res, 43004, 'invalid content-type, expected application/json');
    let body: any;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return this.answer(res, 43000, 'invalid json');
    }
    const problem = messageProblem(body);
    if (problem) return this.answer(res, 40035, `invalid parameter: ${problem}`);
    if (this.held) {
      this.held.push(res);
      return;
    }
    if (this.failures.left > 0) {
      this.failures.left -= 1;
      this.failed += 1;
      if (this.failures.mode === 'http500') {
        res.writeHead(500).end('internal error');
        return;
      }
      return this.answer(res, 130101, 'send too fast, exceed 20 times per minute');
    }
    const deliveryId = req.headers['x-adw-delivery-id'];
    this.messages.push({ at: Date.now(), msgtype: body.msgtype, body, ...(typeof deliveryId === 'string' ? { deliveryId } : {}) });
    this.answer(res, 0, 'ok');
  }
}

const nonEmpty = (v: unknown) => typeof v === 'string' && v.length > 0;

/** What is wrong with a robot message body, or undefined when it is one the API takes. */
export function messageProblem(body: any): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'the body must be a JSON object';
  switch (body.msgtype) {
    case 'text':
      return nonEmpty(body.text?.content) ? undefined : 'text.content is required';
    case 'markdown':
      return nonEmpty(body.markdown?.title) && nonEmpty(body.markdown?.text) ? undefined : 'markdown.title and markdown.text are required';
    case 'link':
      return nonEmpty(body.link?.title) && nonEmpty(body.link?.text) && nonEmpty(body.link?.messageUrl) ? undefined : 'link.title, link.text and link.messageUrl are required';
    case 'actionCard':
      return nonEmpty(body.actionCard?.title) && nonEmpty(body.actionCard?.text) ? undefined : 'actionCard.title and actionCard.text are required';
    case 'feedCard':
      return Array.isArray(body.feedCard?.links) && body.feedCard.links.length > 0 ? undefined : 'feedCard.links is required';
    default:
      return `msgtype ${JSON.stringify(body.msgtype)} is not one of text, markdown, link, actionCard, feedCard`;
  }
}

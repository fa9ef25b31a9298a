// A webhook receiver on loopback for result delivery tests: it verifies the signature
// (`x-adw-signature: sha256=<hex HMAC-SHA256(secret, "<x-adw-timestamp>.<body>")>`) when it has
// a secret, records what it accepted (the oracle), and can be told to fail, answer slowly or hold.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { allowDeliveryTarget } from './delivery-allow.js';

export interface Received {
  deliveryId: string;
  timestamp: string;
  body: any;
}

export class WebhookReceiver {
  readonly accepted: Received[] = [];
  /** Requests refused for a bad or missing signature. */
  readonly badSignatures: string[] = [];
  /** Requests answered with a failure status because of `failNext` or `failAlways`. */
  failed = 0;
  private failLeft = 0;
  private failStatus = 500;
  private always: number | undefined;
  private delayMs = 0;
  private held: ServerResponse[] | undefined;
  private server!: Server;
  url = '';

  constructor(readonly secret?: string) {}

  async start(options: { allowed?: boolean } = {}): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    // Deliveries reach loopback only when the operator allows it; a receiver started with
    // `allowed: false` is one the process must refuse to reach.
    if (options.allowed !== false) allowDeliveryTarget(`127.0.0.1:${(this.server.address() as AddressInfo).port}`);
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  failNext(n: number, status = 500): void {
    this.failLeft = n;
    this.failStatus = status;
  }

  /** Every request fails with `status` until `failAlways(undefined)`. */
  failAlways(status: number | undefined): void {
    this.always = status;
  }

  /** Each accepted request is answered after `ms` (a slow receiver widens the window for a double send). */
  slow(ms: number): void {
    this.delayMs = ms;
  }

  hold(): void {
    this.held = [];
  }

  get heldCount(): number {
    return this.held?.length ?? 0;
  }

  release(): void {
    for (const res of this.held ?? []) if (!res.destroyed) res.destroy();
    this.held = undefined;
  }

  /** How many times each delivery id was accepted. */
  counts(): Map<string, number> {
    const m = new Map<string, number>();
    for (const r of this.accepted) m.set(r.deliveryId, (m.get(r.deliveryId) ?? 0) + 1);
    return m;
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const deliveryId = String(req.headers['x-adw-delivery-id'] ?? '');
    const timestamp = String(req.headers['x-adw-timestamp'] ?? '');
    if (req.method !== 'POST' || !deliveryId || !/^[0-9]+$/.test(timestamp) || !/^application\/json\b/.test(req.headers['content-type'] ?? '')) {
      res.writeHead(400).end('not a delivery');
      return;
    }
    if (this.secret !== undefined) {
      const expected = Buffer.from(`sha256=${createHmac('sha256', this.secret).update(`${timestamp}.${text}`).digest('hex')}`);
      const given = Buffer.from(String(req.headers['x-adw-signature'] ?? ''));
      if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
        this.badSignatures.push(deliveryId);
        res.writeHead(401).end('bad signature');
        return;
      }
    }
    if (this.held) {
      this.held.push(res);
      return;
    }
    if (this.always !== undefined || this.failLeft > 0) {
      if (this.always === undefined) this.failLeft -= 1;
      this.failed += 1;
      res.writeHead(this.always ?? this.failStatus).end('failing as told');
      return;
    }
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    // Recorded before the answer: a sender that never reads it still delivered (at least once).
    this.accepted.push({ deliveryId, timestamp, body: JSON.parse(text) });
    res.writeHead(204).end();
  }
}

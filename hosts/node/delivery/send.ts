// One attempt of one delivery: the HTTP request a target gets (a signed webhook, or a DingTalk
// robot message), sent with undici under a timeout, and what its answer means. undici is loaded
// with the first send: importing it costs a process ~15 MB of resident memory, and most
// processes never deliver.
//
// | target   | request                                                                 | success                    |
// | -------- | ----------------------------------------------------------------------- | -------------------------- |
// | webhook  | POST url, JSON body; `x-adw-delivery-id`, `x-adw-timestamp` (ms), and    | any 2xx                    |
// |          | `x-adw-signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>` |                            |
// |          | when the target has a secretRef                                         |                            |
// | dingtalk | POST webhookUrl (+ `&timestamp=<ms>&sign=<base64 HMAC-SHA256(secret,     | HTTP 200 and `errcode: 0`  |
// |          | "<timestamp>\n<secret>")>` with a secretRef), `{msgtype, text|markdown}` |                            |
//
// A failure is retried (`retryable`) unless the receiver said the request itself is wrong: a
// webhook's 4xx other than 408, 425 and 429. Network errors, timeouts, 5xx, 429 and DingTalk's
// nonzero `errcode` are retried until the attempts run out.
import { createHash, createHmac } from 'node:crypto';
import { allowedTargets, checkTargetHost, guardedLookup } from './address.js';
import { WorkflowError } from '../sdk/errors.js';
import type { ClaimedDelivery, DeliveryTarget } from '../../core/delivery-outbox.js';
import { deliveryLimits } from '../limits.js';

export interface SendResult {
  ok: boolean;
  statusCode?: number;
  error?: string;
  /** False when sending the same request again cannot succeed. */
  retryable: boolean;
}

/** The JSON a webhook receives (and the facts a DingTalk message is written from). */
export function deliveryBody(d: Pick<ClaimedDelivery, 'id' | 'runId' | 'phase' | 'runStatus' | 'payload'>): Record<string, unknown> {
  const base = { deliveryId: d.id, runId: d.runId, phase: d.phase, runStatus: d.runStatus };
  if (d.phase === 'ended') {
    const o = (d.payload ?? {}) as { result?: unknown; error?: unknown };
    return { ...base, outcome: { status: d.runStatus, ...(o.result !== undefined ? { result: o.result } : {}), ...(o.error !== undefined ? { error: o.error } : {}) } };
  }
  return { ...base, approval: d.payload };
}

/** `sha256=<hex>` of HMAC-SHA256(secret, `<timestamp>.<body>`): what a webhook receiver recomputes. */
export function webhookSignature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The DingTalk robot's `sign`: base64 HMAC-SHA256 keyed by the secret over `<timestamp>\n<secret>` (not yet URL-encoded). */
export function dingtalkSign(secret: string, timestamp: string): string {
  return createHmac('sha256', secret).update(`${timestamp}\n${secret}`).digest('base64');
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The DingTalk message of a delivery: plain text, or markdown with a title. */
export function dingtalkMessage(body: Record<string, unknown>, format: 'text' | 'markdown' = 'text'): Record<string, unknown> {
  const runId = String(body.runId);
  let title: string;
  let detail: string;
  if (body.phase === 'ended') {
    const outcome = body.outcome as { status: string; result?: unknown; error?: { code?: string; message?: string } };
    title = `Run ${runId} ${outcome.status}`;
    detail = outcome.error ? `${outcome.error.code ?? 'error'}: ${outcome.error.message ?? ''}` : outcome.result !== undefined ? JSON.stringify(outcome.result) : '';
  } else {
    const a = (body.approval ?? {}) as { nodeId?: string; prompt?: unknown };
    title = `Run ${runId} waits for approval at ${a.nodeId ?? '?'}`;
    const prompt = a.prompt === undefined ? '' : typeof a.prompt === 'string' ? a.prompt : JSON.stringify(a.prompt);
    detail = `${prompt}${prompt ? '\n' : ''}approve: agent-workflow approve ${runId} ${a.nodeId ?? ''} --by <you>`;
  }
  const text = clip(detail ? `${title}\n${detail}` : title, deliveryLimits.dingtalkTextCharsMax);
  if (format === 'markdown') return { msgtype: 'markdown', markdown: { title: clip(title, 100), text: `### ${title}\n\n${clip(detail, deliveryLimits.dingtalkTextCharsMax - title.length - 8)}` } };
  return { msgtype: 'text', text: { content: text } };
}

/**
 * What is kept of a failed answer's body: its length and digest, never the text. A target may be
 * an internal service whose error page holds secrets, and the error is stored and shown.
 */
function answerDigest(text: string): string {
  if (!text) return '';
  const bytes = Buffer.byteLength(text);
  return ` (body ${bytes} bytes, sha256:${createHash('sha256').update(text).digest('hex')})`;
}

/** Reads at most `deliveryLimits.responseBytesMax` of a response body, and drops the rest. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy?: () => void }): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    parts.push(chunk);
    size += chunk.length;
    if (size >= deliveryLimits.responseBytesMax) {
      body.destroy?.();
      break;
    }
  }
  return Buffer.concat(parts).subarray(0, deliveryLimits.responseBytesMax).toString('utf8');
}

/**
 * Sends one delivery. `secret` is the value of the target's secretRef (the caller reads the
 * environment); `now` gives the timestamp signed over.
 */
let undici: Promise<typeof import('undici')> | undefined;

export async function sendDelivery(d: ClaimedDelivery, options: { secret?: string; accessToken?: string; timeoutMs: number; now: number }): Promise<SendResult> {
  const { request, Agent } = await (undici ??= import('undici'));
  const target: DeliveryTarget = d.target;
  const timestamp = String(options.now);
  const payload = deliveryBody(d);
  let url: string;
  let body: string;
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'x-adw-delivery-id': d.id, 'x-adw-timestamp': timestamp };
  if (target.kind === 'webhook') {
    url = target.url;
    body = JSON.stringify(payload);
    if (options.secret !== undefined) headers['x-adw-signature'] = webhookSignature(options.secret, timestamp, body);
  } else {
    const u = new URL(target.webhookUrl);
    if (options.accessToken !== undefined) u.searchParams.set('access_token', options.accessToken);
    if (options.secret !== undefined) {
      u.searchParams.set('timestamp', timestamp);
      u.searchParams.set('sign', dingtalkSign(options.secret, timestamp));
    }
    url = u.toString();
    body = JSON.stringify(dingtalkMessage(payload, target.format));
  }
  let statusCode: number;
  let text: string;
  let dispatcher: InstanceType<typeof Agent> | undefined;
  try {
    // The connector checks the address DNS answered before it connects (see address.ts);
    // `request` follows no redirects, so a 3xx is an answer, never a second hop.
    // A literal address skips the lookup, so it is checked here (a target stored before the entry
    // check, or an allow-list entry since removed).
    checkTargetHost(new URL(url), target.kind === 'webhook' ? 'url' : 'webhookUrl');
    const u = new URL(url);
    dispatcher = new Agent({ connect: { lookup: guardedLookup(u.port || (u.protocol === 'https:' ? '443' : '80'), allowedTargets()) as never } });
    const res = await request(url, {
      dispatcher,
      method: 'POST',
      headers,
      body,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    statusCode = res.statusCode;
    text = await readCapped(res.body as unknown as AsyncIterable<Buffer>);
    void dispatcher.close().catch(() => {});
  } catch (err) {
    const e = err as { name?: string; code?: string; message?: string };
    const timedOut = e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT' || e.code === 'UND_ERR_CONNECT_TIMEOUT';
    void dispatcher?.destroy().catch(() => {});
    if (err instanceof WorkflowError) return { ok: false, retryable: false, error: `delivery.target-refused: ${err.message}` };
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    if (e.code === 'ADW_TARGET_REFUSED' || cause?.code === 'ADW_TARGET_REFUSED') return { ok: false, retryable: false, error: (e.code === 'ADW_TARGET_REFUSED' ? e.message : cause?.message) ?? 'delivery.target-refused' };
    return { ok: false, retryable: true, error: timedOut ? `delivery.timeout: no answer within ${options.timeoutMs} ms` : `delivery.network: ${e.code ? `${e.code} ` : ''}${e.message ?? String(err)}` };
  }
  if (target.kind === 'webhook') {
    if (statusCode >= 200 && statusCode < 300) return { ok: true, statusCode, retryable: false };
    const retryable = statusCode >= 500 || statusCode === 408 || statusCode === 425 || statusCode === 429 || statusCode < 400;
    return { ok: false, statusCode, retryable, error: `delivery.http-status: HTTP ${statusCode}${answerDigest(text)}` };
  }
  if (statusCode !== 200) return { ok: false, statusCode, retryable: true, error: `delivery.http-status: HTTP ${statusCode}${answerDigest(text)}` };
  let answer: { errcode?: unknown; errmsg?: unknown };
  try {
    answer = JSON.parse(text) as typeof answer;
  } catch {
    return { ok: false, statusCode, retryable: true, error: `delivery.dingtalk-bad-answer: the robot answered HTTP 200 without JSON${answerDigest(text)}` };
  }
  if (answer.errcode === 0) return { ok: true, statusCode, retryable: false };
  return { ok: false, statusCode, retryable: true, error: `delivery.dingtalk-errcode: errcode ${String(answer.errcode)}: ${String(answer.errmsg ?? '')}` };
}

// The webhook adapter: `POST /v1/hooks/<bindingId>` on `agent-workflow serve --http`.
//
// The sender signs every request with the binding's secret, in one of two schemes:
//
// Standard Webhooks (standardwebhooks.com), which signs the event id too:
//   webhook-id:        <its own id of the event>
//   webhook-timestamp: <unix seconds>
//   webhook-signature: v1,<base64 HMAC-SHA256(key, `${id}.${timestamp}.${rawBody}`)> [v1,<…> …]
//   (key: the bytes of a `whsec_<base64>` secret, else the secret's UTF-8 bytes)
//   The event id is the dedupe key.
//
// The adw scheme, whose signature does not cover the id header:
//   x-adw-timestamp: <unix seconds>
//   x-adw-signature: sha256=<hex of HMAC-SHA256(secret, `${timestamp}.${rawBody}`)>
//   x-adw-event-id:  <its own id of the event>   (optional, informative)
//   Because anyone holding one captured request could forge ids, the dedupe key is always
//   `sha256:<hex>` of the body: a replay with another id finds the first run.
//
// Checks, in this order, each refusal recorded in the ingress journal and answered as JSON
// `{ error: { code, message } }`:
//
//   status  code                          when
//   413     webhook.body-too-large        the body is larger than triggerLimits.bodyBytesMax
//   404     binding.not-found             no published webhook binding of that id (unknown or disabled)
//   503     trigger.secret-missing        the secret's environment variable is not set in this process
//   401     webhook.signature-missing     no timestamp or signature header
//   401     webhook.timestamp-expired     the timestamp is further from the clock than the tolerance
//   401     webhook.bad-signature         the signature does not match (compared in constant time)
//   415     webhook.unsupported-media     the content type is not JSON
//   400     webhook.bad-json              the body is not JSON
//   413     webhook.too-deep              the body is nested deeper than triggerLimits.bodyDepthMax
//   400     webhook.bad-number            the body has a number beyond a double's range (1e999)
//   400     trigger.bad-event-id          the event id header is empty or too long
//   422     trigger.mapping-failed, trigger.input-invalid   the binding cannot make a valid input of it
//   503     trigger.target-unavailable    the target revision cannot be compiled (deleted?)
//
// Accepted: 202 `{ runId, deduplicated }` (a duplicate answers the first run's id).
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { WorkflowBinding, WebhookConfig } from './bindings.js';
import { parseJsonBody } from './json-body.js';
import { TriggerRejected, type TriggerPipeline } from './ingress.js';
import { triggerLimits } from '../limits.js';
import type { TriggerHost } from './trigger-host.js';

export interface TriggerResponse {
  status: number;
  body: unknown;
  contentType?: string;
}

export const webhookHeaders = { timestamp: 'x-adw-timestamp', signature: 'x-adw-signature', eventId: 'x-adw-event-id' } as const;
export const standardWebhookHeaders = { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' } as const;

/** The HMAC key of a Standard Webhooks secret: `whsec_<base64>` decoded, else the secret's own bytes. */
function standardKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

/** The `webhook-signature` value (one `v1,` signature) of a Standard Webhooks request. */
export function signStandardWebhook(secret: string, id: string, timestamp: number | string, rawBody: string | Buffer): string {
  return `v1,${createHmac('sha256', standardKey(secret)).update(`${id}.${timestamp}.`).update(rawBody).digest('base64')}`;
}

function standardSignatureMatches(secret: string, id: string, timestamp: string, raw: Buffer, given: string): boolean {
  const expected = createHmac('sha256', standardKey(secret)).update(`${id}.${timestamp}.`).update(raw).digest();
  // Several space-separated signatures (a secret being rotated): any v1 one that matches will do.
  let ok = false;
  for (const part of given.split(' ')) {
    const m = /^v1,([A-Za-z0-9+/]{43}=)$/.exec(part);
    if (m && timingSafeEqual(expected, Buffer.from(m[1], 'base64'))) ok = true;
  }
  return ok;
}

/** The `x-adw-signature` value of a body: what a sender computes. */
export function signWebhook(secret: string, timestamp: number | string, rawBody: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex')}`;
}

/** Status of every code the pipeline may refuse with. */
export function statusOfRejection(code: string): number {
  if (code === 'trigger.mapping-failed' || code === 'trigger.input-invalid') return 422;
  if (code === 'trigger.target-unavailable' || code === 'trigger.secret-missing') return 503;
  if (code === 'trigger.bad-event-id') return 400;
  return 400;
}

const refusal = (status: number, code: string, message: string): TriggerResponse => ({ status, body: { error: { code, message } } });

type Headers = Record<string, string | string[] | undefined>;
const header = (h: Headers, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

function signatureMatches(secret: string, timestamp: string, raw: Buffer, given: string): boolean {
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(given.trim());
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(raw).digest();
  return timingSafeEqual(expected, Buffer.from(m[1], 'hex'));
}

/** The active binding of `id` when it is of `source`; a store failure is thrown, not taken for "not found". */
export async function activeBinding(rt: TriggerHost, id: string, source: WorkflowBinding['source']): Promise<WorkflowBinding | undefined> {
  try {
    const binding = await rt.bindings.active(id);
    return binding.source === source ? binding : undefined;
  } catch (err) {
    if ((err as { code?: string }).code === 'binding.not-found') return undefined;
    throw err;
  }
}

/** Handles one webhook delivery whose body was read within the size limit. */
export async function handleWebhook(rt: TriggerHost, pipeline: TriggerPipeline, bindingId: string, headers: Headers, raw: Buffer, env: NodeJS.ProcessEnv = process.env): Promise<TriggerResponse> {
  const eventIdHeader = header(headers, standardWebhookHeaders.id) ?? header(headers, webhookHeaders.eventId);
  const reject = async (status: number, code: string, message: string, binding?: WorkflowBinding, extra: { caller?: string; occurredAt?: number } = {}) => {
    await pipeline.reject('webhook', bindingId, { code, message }, { ...(binding ? { bindingRevision: binding.revision } : {}), ...(eventIdHeader !== undefined ? { sourceEventId: eventIdHeader } : {}), ...extra });
    return refusal(status, code, message);
  };
  const binding = await activeBinding(rt, bindingId, 'webhook');
  if (!binding) return reject(404, 'binding.not-found', `there is no published webhook binding ${bindingId}`);
  const config = binding.config as WebhookConfig;
  const secret = env[config.secretRef];
  if (!secret) {
    // The variable's name is the server's configuration: in its log, not in the answer to anyone.
    pipeline.warn(`webhook binding ${bindingId}: the environment variable ${config.secretRef} named by its secretRef is not set in this process`);
    return reject(503, 'trigger.secret-missing', `binding ${bindingId} cannot verify requests: its secret is not configured on this server`, binding);
  }
  const caller = `hmac:${config.secretRef}`;
  const standardId = header(headers, standardWebhookHeaders.id);
  const standard = standardId !== undefined || header(headers, standardWebhookHeaders.signature) !== undefined;
  const timestamp = header(headers, standard ? standardWebhookHeaders.timestamp : webhookHeaders.timestamp);
  const signature = header(headers, standard ? standardWebhookHeaders.signature : webhookHeaders.signature);
  if (timestamp === undefined || signature === undefined || (standard && standardId === undefined)) {
    const needed = standard ? Object.values(standardWebhookHeaders).join(', ') : `${webhookHeaders.timestamp} and ${webhookHeaders.signature}`;
    return reject(401, 'webhook.signature-missing', `the request needs the ${needed} headers`, binding);
  }
  const seconds = /^[0-9]{1,12}$/.test(timestamp) ? Number(timestamp) : NaN;
  const tolerance = config.toleranceSeconds ?? triggerLimits.webhookToleranceSecondsDefault;
  const now = rt.kernel.now();
  if (!Number.isFinite(seconds) || Math.abs(now / 1000 - seconds) > tolerance) {
    return reject(401, 'webhook.timestamp-expired', `the timestamp ${JSON.stringify(timestamp)} is not within ${tolerance} s of the server's clock`, binding);
  }
  const matches = standard ? standardSignatureMatches(secret, standardId!, timestamp, raw, signature) : signatureMatches(secret, timestamp, raw, signature);
  if (!matches) return reject(401, 'webhook.bad-signature', `the signature does not match the ${standard ? 'id, timestamp and body' : 'body and timestamp'}`, binding, { occurredAt: seconds * 1000 });
  const signed = { caller, occurredAt: seconds * 1000 };
  const type = (header(headers, 'content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json' && !type.endsWith('+json')) return reject(415, 'webhook.unsupported-media', `the body must be application/json, not ${JSON.stringify(type)}`, binding, signed);
  const parsed = parseJsonBody(raw.toString('utf8'), triggerLimits.bodyDepthMax);
  if (!parsed.ok) return reject(parsed.reason === 'too-deep' ? 413 : 400, `webhook.${parsed.reason}`, parsed.message, binding, signed);
  const body = parsed.value;
  // Only a signed id may name the event; an unsigned one could be forged to start a run per id.
  const sourceEventId = standard ? standardId! : `sha256:${createHash('sha256').update(raw).digest('hex')}`;
  try {
    const admitted = await pipeline.admit(binding, {
      source: 'webhook',
      sourceEventId,
      ...signed,
      payload: { body, eventId: sourceEventId, timestamp: seconds, bindingId, receivedAt: new Date(now).toISOString() },
    });
    return { status: 202, body: { runId: admitted.runId, deduplicated: admitted.deduplicated } };
  } catch (err) {
    if (err instanceof TriggerRejected) return refusal(statusOfRejection(err.code), err.code, err.message);
    throw err;
  }
}

// The `delivery` launch option: where a run's results are sent (see docs/triggers.md, "Result
// delivery"). A target names the environment variable that holds its secret (`secretRef`),
// never the secret: what is stored with the run and recorded in its journal is safe to show.
import canonicalizeModule from 'canonicalize';
import type { DeliveryTarget } from '../../core/delivery-outbox.js';
import { sha256Digest } from '../../shared/digest.js';
import { WorkflowError } from '../sdk/errors.js';
import { deliveryLimits } from '../limits.js';
import { checkTargetHost } from './address.js';

export type { DeliveryTarget };

const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as unknown as (value: unknown) => string | undefined;

const secretRefPattern = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const keysOf: Record<DeliveryTarget['kind'], readonly string[]> = {
  webhook: ['kind', 'url', 'secretRef'],
  dingtalk: ['kind', 'webhookUrl', 'secretRef', 'accessTokenRef', 'format'],
};

function bad(message: string): WorkflowError {
  return new WorkflowError('launch.bad-delivery', message);
}

function checkUrl(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > deliveryLimits.urlCharsMax) throw bad(`delivery.${field} must be a URL of at most ${deliveryLimits.urlCharsMax} characters`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad(`delivery.${field} ${JSON.stringify(value)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad(`delivery.${field} must be an http or https URL, not ${url.protocol}`);
  if (url.username || url.password) throw bad(`delivery.${field} must not carry credentials; name an environment variable in secretRef instead`);
  checkTargetHost(url, field);
  return value;
}

/** Checks a `delivery` launch option and answers it with only its known fields (`launch.bad-delivery`). */
export function deliveryTargetOf(value: unknown): DeliveryTarget {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw bad('delivery must be an object { kind: "webhook", url } or { kind: "dingtalk", webhookUrl }');
  const v = value as Record<string, unknown>;
  if (v.kind !== 'webhook' && v.kind !== 'dingtalk') throw bad(`delivery.kind must be "webhook" or "dingtalk", not ${JSON.stringify(v.kind)}`);
  const unknown = Object.keys(v).filter((k) => !keysOf[v.kind as DeliveryTarget['kind']].includes(k) && v[k] !== undefined);
  if (unknown.length > 0) throw bad(`delivery of kind ${v.kind} has unknown field(s) ${unknown.join(', ')}`);
  if (v.secretRef !== undefined && (typeof v.secretRef !== 'string' || !secretRefPattern.test(v.secretRef))) {
    throw bad(`delivery.secretRef must name an environment variable (${secretRefPattern.source}); the secret itself is never stored`);
  }
  const secret = v.secretRef !== undefined ? { secretRef: v.secretRef as string } : {};
  if (v.kind === 'webhook') return { kind: 'webhook', url: checkUrl(v.url, 'url'), ...secret };
  if (v.format !== undefined && v.format !== 'text' && v.format !== 'markdown') throw bad(`delivery.format must be "text" or "markdown", not ${JSON.stringify(v.format)}`);
  if (v.accessTokenRef !== undefined && (typeof v.accessTokenRef !== 'string' || !secretRefPattern.test(v.accessTokenRef))) {
    throw bad(`delivery.accessTokenRef must name an environment variable (${secretRefPattern.source}); the robot's access_token itself is never stored`);
  }
  const webhookUrl = checkUrl(v.webhookUrl, 'webhookUrl');
  // The robot's access_token is a credential: kept out of everything stored with the run.
  if (new URL(webhookUrl).searchParams.has('access_token')) {
    throw bad('delivery.webhookUrl carries the robot\'s access_token, which would be stored with the run: put the token in an environment variable, name it in accessTokenRef and give the URL without it');
  }
  return {
    kind: 'dingtalk',
    webhookUrl,
    ...secret,
    ...(v.accessTokenRef !== undefined ? { accessTokenRef: v.accessTokenRef as string } : {}),
    ...(v.format !== undefined ? { format: v.format as 'text' | 'markdown' } : {}),
  };
}

/** `sha256:` of the target's canonical JSON (RFC 8785): the same target always has the same digest. */
export function deliveryDigest(target: DeliveryTarget): string {
  return sha256Digest(canonicalize(target)!);
}

/**
 * Parses `--deliver-to`: `webhook:<url>`, `dingtalk:<webhook url>`, or a bare http(s) URL (a
 * webhook). `--deliver-secret-env NAME` adds the secretRef, `--deliver-token-env NAME` the
 * DingTalk robot's accessTokenRef.
 */
export function deliveryTargetFromFlag(spec: string, secretRef?: string, accessTokenRef?: string): DeliveryTarget {
  const m = /^(webhook|dingtalk):(.*)$/s.exec(spec);
  const kind = m ? m[1] : 'webhook';
  const url = m ? m[2] : spec;
  if (kind === 'webhook' && accessTokenRef !== undefined) throw bad('--deliver-token-env is for a dingtalk: target (the robot\'s access_token)');
  return deliveryTargetOf(kind === 'webhook' ? { kind, url, secretRef } : { kind, webhookUrl: url, secretRef, accessTokenRef });
}

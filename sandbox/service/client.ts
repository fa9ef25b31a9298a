/**
 * Client of the evaluation service. Its outcomes are the in-process
 * evaluator's outcomes: the input is sent as exact JSON text and the output
 * bytes are taken from the response without re-serialising.
 */
import { Agent, request } from 'undici';
import type { ScriptLimits, ScriptOutcome } from '../evaluator.js';
import { parseOutcome } from './protocol.js';
import { CodedError } from '../../engine/protocol/coded-error.js';

export interface RemoteEvaluatorOptions {
  /** Base URL of the service, e.g. http://127.0.0.1:41234 */
  url: string;
  token?: string;
  /** Connections kept per origin (default 8). */
  connections?: number;
  /** Milliseconds to wait for a response (default 60 000). */
  timeoutMs?: number;
}

export interface RemoteEvaluator {
  evaluate(source: string, inputJson: string, limits?: Partial<ScriptLimits>): Promise<ScriptOutcome>;
  close(): Promise<void>;
}

/** A transport or service-level failure (not a script outcome). `code` is a service.* code or `service.unreachable`. */
export class RemoteEvaluatorError extends CodedError {
  constructor(
    code: string,
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(code, message);
  }
}

export function createRemoteEvaluator(options: RemoteEvaluatorOptions): RemoteEvaluator {
  const endpoint = new URL('/v1/evaluate', options.url).toString();
  const timeoutMs = options.timeoutMs ?? 60_000;
  const dispatcher = new Agent({ connections: options.connections ?? 8, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;

  return {
    async evaluate(source, inputJson, limits) {
      const body = JSON.stringify(limits === undefined ? { source, inputJson } : { source, inputJson, limits });
      let res;
      // Evaluation is a pure function of the request, so a request lost with
      // its connection (a keep-alive socket closed by the server as it was
      // reused) is sent once more.
      for (let attempt = 1; ; attempt++) {
        try {
          res = await request(endpoint, { method: 'POST', headers, body, dispatcher });
          break;
        } catch (e) {
          const code = (e as { code?: string }).code;
          const retriable = code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE';
          if (!retriable || attempt >= 2) {
            throw new RemoteEvaluatorError('service.unreachable', e instanceof Error ? e.message : String(e));
          }
        }
      }
      const text = await res.body.text();
      if (res.statusCode === 200) {
        const outcome = parseOutcome(text);
        if (outcome) return outcome;
        throw new RemoteEvaluatorError('service.bad-response', 'response is not an evaluation outcome', 200);
      }
      let code = 'service.bad-response';
      let message = `HTTP ${res.statusCode}`;
      try {
        const parsed = JSON.parse(text) as { error?: { code?: string; message?: string } };
        if (typeof parsed.error?.code === 'string') code = parsed.error.code;
        if (typeof parsed.error?.message === 'string') message = parsed.error.message;
      } catch {
        // keep the defaults
      }
      const retryAfter = Number(res.headers['retry-after']);
      throw new RemoteEvaluatorError(code, message, res.statusCode, Number.isFinite(retryAfter) ? retryAfter * 1000 : undefined);
    },
    async close() {
      await dispatcher.close();
    },
  };
}

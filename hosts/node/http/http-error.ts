// An error the HTTP API answers with its status and `{ error: { code, message } }`.
import { CodedError } from '../../../engine/protocol/coded-error.js';

export class HttpError extends CodedError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
  ) {
    super(code, message);
  }
}

/** A non-negative integer query parameter (or header), within `max`. */
export function intParam(value: string | null | undefined, name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === null || value === undefined || value === '') return fallback;
  if (!/^(0|[1-9][0-9]{0,15})$/.test(value)) throw new HttpError(400, 'http.bad-request', `${name} must be a non-negative integer`);
  const n = Number(value);
  if (n > max) throw new HttpError(400, 'http.bad-request', `${name} must be at most ${max}`);
  return n;
}

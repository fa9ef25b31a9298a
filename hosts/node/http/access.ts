// Who a request to the HTTP API is: the bearer token decides the role and the principal. The
// shared operator token (`--http-token-file` or AGENT_WORKFLOW_HTTP_TOKEN) may read and act, as
// the principal `operator`; a named operator token (`--http-operators-file`, one line per person)
// may read and act as that person; the read-only token (`--http-readonly-token-file`) may only
// read. The server refuses an operator action made with a read-only token (403 `http.forbidden`):
// the console hiding its buttons is a courtesy, not the check. What an action is recorded as
// comes from the token, never from the request.
import { readFileSync, statSync } from 'node:fs';
import { bearerMatches } from '../../../sandbox/service/auth.js';
import { httpLimits } from '../limits.js';

export type AccessRole = 'operator' | 'readonly';

export interface AccessTokens {
  /** May read and act, as `operator`. */
  operator?: string;
  /** May only read. */
  readonly?: string;
  /** Named operator tokens: each may read and act, as its name. */
  operators?: Readonly<Record<string, string>>;
}

/** What a request may do, and who it is recorded as. */
export interface Access {
  role: AccessRole;
  principal: string;
}

/** The principal of the shared operator token, and of every request when no token is configured. */
export const sharedOperator = 'operator';

/** Whether any token is configured (else the API serves without one, on loopback only). */
export function hasTokens(tokens: AccessTokens): boolean {
  return tokens.operator !== undefined || tokens.readonly !== undefined || Object.keys(tokens.operators ?? {}).length > 0;
}

/**
 * What a request's `Authorization` header grants, or `undefined` when it grants nothing. Without
 * any token configured (`--insecure-no-auth`, loopback only) every request is the shared operator's.
 */
export function accessOf(authorization: string | undefined, tokens: AccessTokens): Access | undefined {
  if (!hasTokens(tokens)) return { role: 'operator', principal: sharedOperator };
  // Every token is compared (in constant time each), so which one matched is not told by the timing.
  let found: Access | undefined;
  for (const [name, token] of Object.entries(tokens.operators ?? {})) if (bearerMatches(authorization, token) && !found) found = { role: 'operator', principal: name };
  const operator = tokens.operator !== undefined && bearerMatches(authorization, tokens.operator);
  const readonly = tokens.readonly !== undefined && bearerMatches(authorization, tokens.readonly);
  if (found) return found;
  if (operator) return { role: 'operator', principal: sharedOperator };
  if (readonly) return { role: 'readonly', principal: 'readonly' };
  return undefined;
}

/** The role a request's `Authorization` header grants (see `accessOf`). */
export function roleOf(authorization: string | undefined, tokens: AccessTokens): AccessRole | undefined {
  return accessOf(authorization, tokens)?.role;
}

const operatorName = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/**
 * Reads `--http-operators-file`: one `<name> <token>` a line (`#` starts a comment), each name a
 * person the console and the API record actions as, each token at least 16 characters. Names and
 * tokens are unique; anything else is an `Error` saying which line.
 */
export function readOperatorsFile(file: string): Record<string, string> {
  if (statSync(file).size > httpLimits.operatorsFileBytesMax) throw new Error(`larger than ${httpLimits.operatorsFileBytesMax} bytes`);
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      const line = raw.replace(/#.*$/, '').trim();
      if (line === '') return;
      const [name, token, ...rest] = line.split(/\s+/);
      if (!name || !token || rest.length > 0) throw new Error(`line ${i + 1}: expected "<name> <token>"`);
      if (!operatorName.test(name)) throw new Error(`line ${i + 1}: the name ${JSON.stringify(name)} must match ${operatorName.source}`);
      if (name === sharedOperator || name === 'readonly') throw new Error(`line ${i + 1}: the name ${name} is reserved`);
      if (token.length < 16) throw new Error(`line ${i + 1}: the token of ${name} is shorter than 16 characters`);
      if (name in out) throw new Error(`line ${i + 1}: ${name} is named twice`);
      if (seen.has(token)) throw new Error(`line ${i + 1}: the token of ${name} is another operator's too`);
      out[name] = token;
      seen.add(token);
    });
  if (Object.keys(out).length === 0) throw new Error('it names no operator');
  return out;
}

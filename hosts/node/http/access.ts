// Who a request to the HTTP API is: the bearer token decides the role. The operator token (as
// before, `--http-token-file` or AGENT_WORKFLOW_HTTP_TOKEN) may read and act; the read-only token
// (`--http-readonly-token-file`) may only read. The server refuses an operator action made with a
// read-only token (403 `http.forbidden`): the console hiding its buttons is a courtesy, not the check.
import { bearerMatches } from '../../../sandbox/service/auth.js';

export type AccessRole = 'operator' | 'readonly';

export interface AccessTokens {
  /** May read and act. */
  operator?: string;
  /** May only read. */
  readonly?: string;
}

/** Whether any token is configured (else the API serves without one, on loopback only). */
export function hasTokens(tokens: AccessTokens): boolean {
  return tokens.operator !== undefined || tokens.readonly !== undefined;
}

/**
 * The role a request's `Authorization` header grants, or `undefined` when it grants none. Without
 * any token configured (`--insecure-no-auth`, loopback only) every request is an operator's.
 */
export function roleOf(authorization: string | undefined, tokens: AccessTokens): AccessRole | undefined {
  if (!hasTokens(tokens)) return 'operator';
  // Both are compared (in constant time each), so which one matched is not told by the timing.
  const operator = tokens.operator !== undefined && bearerMatches(authorization, tokens.operator);
  const readonly = tokens.readonly !== undefined && bearerMatches(authorization, tokens.readonly);
  if (operator) return 'operator';
  if (readonly) return 'readonly';
  return undefined;
}

/** Who a run acts for, and the capabilities that grants (`tool:*`, `agent:writer`, `*`). */
export interface Authority {
  id: string;
  scopes: string[];
}

/** Whether a value has the shape of an authority: an `id` and a list of scopes, all text. */
export function isAuthority(value: unknown): value is Authority {
  const a = value as { id?: unknown; scopes?: unknown } | null;
  return a !== null && typeof a === 'object' && typeof a.id === 'string' && Array.isArray(a.scopes) && a.scopes.every((s) => typeof s === 'string');
}

/** The capability a node of a host's type (`acme.compensate@1`) needs: `node:` and its type without the version. */
export function nodeCapability(uses: string): string {
  return `node:${uses.slice(0, uses.lastIndexOf('@'))}`;
}

/** Does a granted scope pattern (`*`, `tool:*`, `tool:echo`) cover another pattern or capability? */
export function scopeCovers(granted: string, asked: string): boolean {
  if (granted === '*' || granted === asked) return true;
  return granted.endsWith(':*') && asked.startsWith(granted.slice(0, -1));
}

/**
 * What a request gets from a grant: the requested identity with the scopes both allow, never
 * more than either. Scopes are patterns, so the intersection keeps each asked pattern the grant
 * covers and each granted pattern the request covers (`tool:*` asked of `tool:echo` → `tool:echo`).
 */
export function narrowAuthority(granted: Authority, requested: Authority): Authority {
  const scopes: string[] = [];
  for (const s of requested.scopes) if (granted.scopes.some((g) => scopeCovers(g, s)) && !scopes.includes(s)) scopes.push(s);
  for (const g of granted.scopes) if (requested.scopes.some((s) => scopeCovers(s, g)) && !scopes.some((s) => scopeCovers(s, g))) scopes.push(g);
  return { id: requested.id, scopes };
}

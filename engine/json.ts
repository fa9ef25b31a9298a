import { limits } from './limits.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** RFC 6901 JSON pointer lookup; `undefined` when the path does not exist. */
export function getPointer(value: unknown, pointer: string): unknown {
  if (pointer === '' || pointer === '/') return pointer === '' ? value : (value as Record<string, unknown>)?.[''];
  if (!pointer.startsWith('/')) return undefined;
  let current: unknown = value;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (current === null || typeof current !== 'object') return undefined;
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(key)) return undefined;
      current = current[Number(key)];
    } else {
      if (!Object.prototype.hasOwnProperty.call(current, key)) return undefined;
      current = (current as Record<string, unknown>)[key];
    }
  }
  return current;
}

export function escapePointerToken(token: string | number): string {
  return String(token).replace(/~/g, '~0').replace(/\//g, '~1');
}

/** A JSON object: not null, not a list. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function isValidPointer(pointer: unknown): pointer is string {
  return typeof pointer === 'string' && (pointer === '' || (pointer.startsWith('/') && !/~[^01]|~$/.test(pointer)));
}

/**
 * Whether a value is plain JSON within a depth bound: the walk of `jsonProblem` without the
 * pointer texts it builds for its message (the common case, and the cheap one in the guest).
 */
function isPlainJson(v: unknown, depth: number, depthMax: number, seen: unknown[]): boolean {
  if (depth > depthMax) return false;
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (typeof v !== 'object') return false;
  if (seen.includes(v)) return false;
  seen.push(v);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!isPlainJson(v[i], depth + 1, depthMax, seen)) return false;
  } else {
    const keys = Object.keys(v as object);
    for (let i = 0; i < keys.length; i++) if (!isPlainJson((v as Record<string, unknown>)[keys[i]], depth + 1, depthMax, seen)) return false;
  }
  seen.pop();
  return true;
}

/** Checks that a value is plain JSON within a depth bound; returns a reason when it is not. */
export function jsonProblem(value: unknown, depthMax: number = limits.nodeOutputDepthMax): string | undefined {
  if (isPlainJson(value, 0, depthMax, [])) return undefined;
  const seen: unknown[] = [];
  const walk = (v: unknown, depth: number, path: string): string | undefined => {
    if (depth > depthMax) return `nesting deeper than ${depthMax} at ${path || '/'}`;
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return undefined;
    if (typeof v === 'number') return Number.isFinite(v) ? undefined : `non-finite number at ${path || '/'}`;
    if (typeof v !== 'object') return `${typeof v} at ${path || '/'} is not JSON`;
    if (seen.includes(v)) return `cycle at ${path || '/'}`;
    seen.push(v);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const p = walk(v[i], depth + 1, `${path}/${i}`);
        if (p) return p;
      }
    } else {
      for (const k of Object.keys(v as object)) {
        const p = walk((v as Record<string, unknown>)[k], depth + 1, `${path}/${escapePointerToken(k)}`);
        if (p) return p;
      }
    }
    seen.pop();
    return undefined;
  };
  return walk(value, 0, '');
}

export function clip(text: string, charsMax: number = limits.errorMessageCharsMax): string {
  return text.length <= charsMax ? text : `${text.slice(0, charsMax)}…`;
}

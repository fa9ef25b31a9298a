// The table of node kinds, filled once by index.ts when the engine loads. Kinds that work with
// other kinds (a call finds its kind's effect, a foreach its body's kind) read it from here, so
// no kind imports index.ts, which imports every kind.
import { EngineError } from '../errors.js';
import type { Json } from '../json.js';
import type { NodeKind } from './kind.js';

const kinds = new Map<string, NodeKind>();

/** Every kind, by `uses`, in the order index.ts registered them. */
export const nodeKinds: ReadonlyMap<string, NodeKind> = kinds;

/** Called once, by index.ts. */
export function registerKinds(list: readonly NodeKind[]): void {
  for (const k of list) kinds.set(k.uses, k);
}

/** The kind of a node the compiler accepted. A `uses` it does not know is a programmer error. */
export function kindOf(uses: string): NodeKind {
  const kind = kinds.get(uses);
  if (!kind) throw new EngineError('engine.unknown-node-kind', `no node kind ${JSON.stringify(uses)}; a validated plan has none`);
  return kind;
}

/** The capability string a node's configuration implies, e.g. `tool:search`. */
export function impliedCapability(uses: string, config: Record<string, Json> | undefined): string | undefined {
  return kinds.get(uses)?.impliedCapability?.(config ?? {});
}

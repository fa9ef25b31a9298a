// Opens the built Node host (dist/) in a fresh temporary state directory.
import canonicalizeModule from 'canonicalize';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngineInstance, type ComponentLoader } from '../../dist/hosts/core/engine-instance.js';
import { WorkflowRuntime, type RuntimeOptions } from '../../dist/hosts/node/index.js';
import { nodeComponentLoader } from '../../dist/hosts/node/sdk/component.js';
import { sha256Hex } from '../../dist/hosts/shared/digest.js';
import type { ExecutionPlan } from '../../dist/hosts/core/types.js';

const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as (value: unknown) => string;

/**
 * `plan` without some of its behaviour flags, under the hash such a plan has (the digest of its
 * canonical JSON): a plan an older engine compiled, as a store holds runs of.
 */
export function planWithoutFlags(plan: ExecutionPlan, flags: string[]): ExecutionPlan {
  const { planHash: _hash, ...body } = plan;
  const older = { ...body, flags: body.flags.filter((f) => !flags.includes(f)) };
  return { ...older, planHash: `sha256:${sha256Hex(canonicalize(older))}` } as ExecutionPlan;
}

export function tempDir(prefix = 'adw-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function openRuntime(options: RuntimeOptions = {}): Promise<WorkflowRuntime> {
  return WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, ...options });
}

export const api = 'workflow.gm-hz.dev/v1alpha1';

/**
 * The built component behind an `EngineInstance` with the Node host's SHA-256 and no script
 * sandbox: what a test that drives the engine directly needs. `load` answers cold activations.
 */
export function scriptlessEngine(options: { loader?: ComponentLoader; load?: Parameters<typeof EngineInstance.create>[1]['load'] } = {}): Promise<EngineInstance> {
  return EngineInstance.create(options.loader ?? nodeComponentLoader(), {
    load: options.load ?? (() => undefined),
    evaluateScript: () => ({ ok: false, error: { code: 'script.runtime', message: 'no scripts here' } }),
    checkScriptSyntax: () => undefined,
    sha256Hex,
    log: () => undefined,
  });
}

/** A template from nodes and a linear chain of edges (start -> ... -> end). */
export function chain(id: string, middle: any[], extra: Record<string, unknown> = {}): any {
  const nodes = [{ id: 'start', uses: 'core.start@1' }, ...middle, { id: 'end', uses: 'core.end@1' }];
  const edges = nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id }));
  return { apiVersion: api, kind: 'WorkflowTemplate', metadata: { id }, spec: { nodes, edges, ...extra } };
}

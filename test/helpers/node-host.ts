// Opens the built Node host (dist/) in a fresh temporary state directory.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowRuntime, type RuntimeOptions } from '../../dist/hosts/node/index.js';

export function tempDir(prefix = 'adw-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function openRuntime(options: RuntimeOptions = {}): Promise<WorkflowRuntime> {
  return WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, ...options });
}

export const api = 'workflow.gm-hz.dev/v1alpha1';

/** A template from nodes and a linear chain of edges (start -> ... -> end). */
export function chain(id: string, middle: any[], extra: Record<string, unknown> = {}): any {
  const nodes = [{ id: 'start', uses: 'core.start@1' }, ...middle, { id: 'end', uses: 'core.end@1' }];
  const edges = nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id }));
  return { apiVersion: api, kind: 'WorkflowTemplate', metadata: { id }, spec: { nodes, edges, ...extra } };
}

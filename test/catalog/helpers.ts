import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';

export const api = 'workflow.gm-hz.dev/v1alpha1';

const made: string[] = [];

export function tempDir(prefix = 'catalog-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes the directories `tempDir` made; call it once every runtime of the file is closed. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export const tools = {
  upper: { idempotent: true, execute: ({ text }: { text: string }) => ({ text: String(text).toUpperCase() }) },
};

export function openRuntime(dir: string, extra: Record<string, unknown> = {}): Promise<WorkflowRuntime> {
  return WorkflowRuntime.open({ dir, tools, log: () => undefined, ...extra });
}

/** A valid template: start -> upper (tool) -> end. */
export function upperTemplate(id: string, extra: { layout?: unknown; name?: string; description?: string } = {}): any {
  return {
    apiVersion: api,
    kind: 'WorkflowTemplate',
    metadata: { id, ...(extra.name ? { name: extra.name } : {}), ...(extra.description ? { description: extra.description } : {}) },
    spec: {
      requires: ['tool:upper'],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'upper', uses: 'tool.call@1', config: { tool: 'upper', idempotent: true }, inputs: { text: { source: 'input', path: '/word' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'upper' },
        { from: 'upper', to: 'end' },
      ],
      outputs: { text: { source: 'output', nodeId: 'upper', path: '/text' } },
    },
    ...(extra.layout !== undefined ? { layout: extra.layout } : {}),
  };
}

/** A child that upper-cases its word after a person approves. */
export function approvalChild(id: string): any {
  const t = upperTemplate(id);
  t.spec.requires.push('approval');
  t.spec.nodes.splice(1, 0, { id: 'ask', uses: 'human.approval@1', config: { prompt: 'go?' } });
  t.spec.edges = [
    { from: 'start', to: 'ask' },
    { from: 'ask', to: 'upper' },
    { from: 'upper', to: 'end' },
  ];
  return t;
}

export function callerTemplate(id: string, target: { id: string; revision: number }): any {
  return {
    apiVersion: api,
    kind: 'WorkflowTemplate',
    metadata: { id, name: `calls ${target.id}@${target.revision}` },
    spec: {
      requires: [`workflow:${target.id}`],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'call', uses: 'workflow.call@1', config: { workflow: target }, inputs: { word: { source: 'input', path: '/word' } } },
        { id: 'end', uses: 'core.end@1' },
      ],
      edges: [
        { from: 'start', to: 'call' },
        { from: 'call', to: 'end' },
      ],
      outputs: { text: { source: 'output', nodeId: 'call', path: '/text' } },
    },
  };
}

/** Waits (without a deadline of its own; vitest's test timeout bounds it) until `check` holds. */
export async function waitUntil<T>(check: () => T | undefined | false | Promise<T | undefined | false>): Promise<T> {
  for (;;) {
    const v = await check();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Publishes a template as its next revision: draft put (create or update) then publish. */
export function publish(rt: WorkflowRuntime, template: any): { revision: number; semanticHash: string; created: boolean } {
  const id = template.metadata.id;
  let expected = 0;
  try {
    expected = rt.catalog.getDraft(id).draftRevision;
  } catch {
    expected = 0;
  }
  const draft = rt.catalog.putDraft(template, { expectedDraftRevision: expected });
  return rt.catalog.publish(id, { expectedDraftRevision: draft.draftRevision });
}

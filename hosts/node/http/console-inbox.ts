// The console's inbox: runs waiting for a person, read from the projections the store keeps
// beside each run (the engine's `approvals` and `attention` lists), so listing reads no journal.
// Every item carries the CLI command that does the same as its buttons.
import type { WorkflowRuntime } from '../runtime.js';

export type Resolution = { kind: 'succeeded'; output: unknown } | { kind: 'retry' } | { kind: 'fail'; reason: string };

export interface InboxItem {
  kind: 'approval' | 'attention';
  runId: string;
  nodeId: string;
  item?: number;
  /** Since when the run waits (its last update, ms since the epoch). */
  since: number;
  /** An approval's question and who may answer it, from the node's config. */
  prompt?: unknown;
  approvers?: unknown;
  /** The equivalent CLI commands, by action. */
  cli: Record<string, string>;
}

/** A word for a POSIX shell: as is when it is safe, else single-quoted. */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_./:@=+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export function approveCommand(runId: string, nodeId: string, approved: boolean, by: string, comment?: string): string {
  return ['agent-workflow', approved ? 'approve' : 'reject', runId, nodeId, '--by', by, ...(comment !== undefined ? ['--comment', comment] : [])].map(shellWord).join(' ');
}

export function resolveCommand(runId: string, nodeId: string, r: Resolution, by: string, item?: number): string {
  const how = r.kind === 'succeeded' ? ['--succeeded', JSON.stringify(r.output ?? null)] : r.kind === 'retry' ? ['--retry'] : ['--fail', r.reason];
  return ['agent-workflow', 'resolve', runId, nodeId, ...how, ...(item !== undefined ? ['--item', String(item)] : []), '--by', by].map(shellWord).join(' ');
}

/** Approvals and needs_attention nodes of the newest `runsMax` paused or running runs. */
export async function inboxItems(rt: WorkflowRuntime, runsMax: number): Promise<InboxItem[]> {
  const runs = await rt.listRuns({ statuses: ['paused', 'running'], limit: runsMax });
  const items: InboxItem[] = [];
  for (const r of runs) {
    const o = r.outcome;
    for (const a of o?.approvals ?? []) {
      items.push({
        kind: 'approval',
        runId: r.runId,
        nodeId: a.nodeId,
        ...(a.item !== undefined ? { item: a.item } : {}),
        since: r.updatedAt,
        ...(a.prompt !== undefined ? { prompt: a.prompt } : {}),
        ...(a.approvers !== undefined ? { approvers: a.approvers } : {}),
        cli: { approve: approveCommand(r.runId, a.nodeId, true, '<you>'), reject: approveCommand(r.runId, a.nodeId, false, '<you>', '<why>') },
      });
    }
    for (const n of o?.attention ?? []) {
      items.push({
        kind: 'attention',
        runId: r.runId,
        nodeId: n.nodeId,
        ...(n.item !== undefined ? { item: n.item } : {}),
        since: r.updatedAt,
        cli: {
          succeeded: resolveCommand(r.runId, n.nodeId, { kind: 'succeeded', output: '<output json>' }, '<you>', n.item),
          retry: resolveCommand(r.runId, n.nodeId, { kind: 'retry' }, '<you>', n.item),
          fail: resolveCommand(r.runId, n.nodeId, { kind: 'fail', reason: '<reason>' }, '<you>', n.item),
        },
      });
    }
  }
  return items;
}

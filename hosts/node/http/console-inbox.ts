// The console's inbox: runs waiting for a person, read from the projections the store keeps
// beside each run (the engine's `approvals` and `attention` lists), so listing reads no journal.
// Every item carries the CLI command that does the same as its buttons.
import type { ConsoleHost } from './console-routes.js';
import { httpLimits } from '../limits.js';

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
  /** A needs_attention node's evidence: the call whose outcome is unknown (kind, name, effect, why). */
  evidence?: unknown;
  /** The unknown shown (the seq of its `node.needs-attention`): an action on this item names it. */
  attentionSeq?: number;
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

/** `output` of a succeeded resolution as the CLI takes it; `outputText` stands in for it in a template. */
export function resolveCommand(runId: string, nodeId: string, r: Resolution | { kind: 'succeeded'; outputText: string }, by: string, item?: number, attentionSeq?: number): string {
  const how = r.kind === 'succeeded' ? ['--succeeded', 'outputText' in r ? r.outputText : JSON.stringify(r.output ?? null)] : r.kind === 'retry' ? ['--retry'] : ['--fail', r.reason];
  const named = attentionSeq !== undefined ? ['--attention-seq', String(attentionSeq)] : [];
  return ['agent-workflow', 'resolve', runId, nodeId, ...how, ...(item !== undefined ? ['--item', String(item)] : []), ...named, '--by', by].map(shellWord).join(' ');
}

/** Approvals and needs_attention nodes of the newest `runsMax` paused or running runs. */
export async function inboxItems(rt: ConsoleHost, runsMax: number): Promise<InboxItem[]> {
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
    const attention = o?.attention ?? [];
    const evidence = attention.length > 0 ? await recentEvidence(rt, r.runId, r.lastSeq) : new Map<string, unknown>();
    for (const n of attention) {
      const found = evidence.get(`${n.nodeId}/${n.item ?? ''}`);
      items.push({
        kind: 'attention',
        runId: r.runId,
        nodeId: n.nodeId,
        ...(n.item !== undefined ? { item: n.item } : {}),
        since: r.updatedAt,
        ...(found !== undefined ? { evidence: found } : {}),
        ...(n.seq !== undefined ? { attentionSeq: n.seq } : {}),
        cli: {
          succeeded: resolveCommand(r.runId, n.nodeId, { kind: 'succeeded', outputText: '<output json>' }, '<you>', n.item, n.seq),
          retry: resolveCommand(r.runId, n.nodeId, { kind: 'retry' }, '<you>', n.item, n.seq),
          fail: resolveCommand(r.runId, n.nodeId, { kind: 'fail', reason: '<reason>' }, '<you>', n.item, n.seq),
        },
      });
    }
  }
  return items;
}

/**
 * The evidence of each `node.needs-attention` among a run's last events (by `<node>/<item>`): the
 * run paused right after them, so they are near its end; older ones are not looked for.
 */
async function recentEvidence(rt: ConsoleHost, runId: string, lastSeq: number): Promise<Map<string, unknown>> {
  const n = httpLimits.inboxEvidenceEventsMax;
  const page = await rt.readEvents(runId, { afterSeq: Math.max(0, lastSeq - n), limit: n });
  const out = new Map<string, unknown>();
  for (const e of page.events) {
    if (e.type === 'node.needs-attention') out.set(`${e.node?.id}/${e.payload?.item ?? ''}`, e.payload?.evidence);
  }
  return out;
}

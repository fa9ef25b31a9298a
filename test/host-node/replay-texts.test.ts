// A recorded replay gets the journal's events as texts, one per line after the request's JSON,
// and compares the events it produces with them as they are; an event in another field order
// (as an older engine wrote them) is still compared field by field, and any other difference is
// the first divergence, at its seq.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { replayExport } from '../../dist/hosts/node/sdk/export.js';

const api = 'workflow.gm-hz.dev/v1alpha1';
const template = {
  apiVersion: api,
  kind: 'WorkflowTemplate',
  metadata: { id: 'replay-texts' },
  spec: {
    requires: ['tool:double'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'each', uses: 'core.foreach@1', config: { maxConcurrency: 2, maxItems: 10, body: { uses: 'tool.call@1', config: { tool: 'double' } } }, inputs: { items: { source: 'input', path: '/numbers' } } },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [
      { from: 'start', to: 'each' },
      { from: 'each', to: 'end' },
    ],
    outputs: { each: { source: 'output', nodeId: 'each' } },
  },
};

let dir: string;
let exported: any;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'replay-texts-'));
  const rt = await WorkflowRuntime.open({ dir, tools: { double: { execute: (x: number) => x * 2 } }, log: () => undefined });
  try {
    const handle = await rt.launch(template, { input: { numbers: [1, 2, 3, 4, 5] } });
    expect((await handle.result).status).toBe('completed');
    exported = await rt.exportRun(handle.runId);
  } finally {
    await rt.close();
  }
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const copy = () => JSON.parse(JSON.stringify(exported));

describe('recorded replay compares the journal as texts', () => {
  it('replays the journal as recorded', async () => {
    const report = await replayExport(exported, { mode: 'recorded' });
    expect(report).toMatchObject({ identical: true, firstDivergence: null, eventsRecorded: exported.events.length, eventsReplayed: exported.events.length });
  });

  it('an event the engine writes, changed in the journal, is the first divergence, at its seq', async () => {
    const changed = copy();
    const target = changed.events.find((e: any) => e.type === 'node.output-committed' && e.node?.id === 'each');
    expect(target).toBeDefined();
    target.payload.output = { results: ['forged'], failures: [] };
    const report = await replayExport(changed, { mode: 'recorded' });
    expect(report.identical).toBe(false);
    expect(report.firstDivergence).toMatchObject({ seq: target.seq, nodeId: 'each', recorded: { payload: { output: { results: ['forged'], failures: [] } } } });
  });

  it('an event whose fields are in another order is the same event', async () => {
    const reordered = copy();
    reordered.events = reordered.events.map((e: any) => Object.fromEntries(Object.entries(e).reverse()));
    expect(JSON.stringify(reordered.events[0])).not.toBe(JSON.stringify(exported.events[0]));
    const report = await replayExport(reordered, { mode: 'recorded' });
    expect(report).toMatchObject({ identical: true, firstDivergence: null });
  });

  it('an inspection folds the same journal to the run as recorded', async () => {
    const report = await replayExport(exported, { mode: 'inspect' });
    expect(report).toMatchObject({ events: exported.events.length, outcome: { status: 'completed' } });
  });
});

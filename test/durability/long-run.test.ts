// Long runs: a hot activation never reads the run's history, and a cold one reads the latest
// checkpoint and at most one checkpoint interval of events after it (an eighth of the run's
// length past 4,096 events, at most 8,192: engine flag `checkpoint-v2`). Measured by counting, not
// by timing: what `load` returns on a cold resume of a run with more than 10,000 events, and that
// a hot run's activations do not call `load` at all.
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { expect, it } from 'vitest';
// @ts-expect-error plain ESM helpers
import { allEvents, buildHost, everything, registryGateway, SqliteJournalStore } from './host.mjs';

const items = 2_600; // 4 events per item: over 10,000 events in all
const answeredBeforeCrash = 2_540;
/** The interval of `checkpoint-v2` after a checkpoint at `seq`. */
const checkpointInterval = (seq: number) => Math.min(8_192, Math.max(512, Math.floor(seq / 8)));

function template() {
  return {
    apiVersion: 'workflow.gm-hz.dev/v1alpha1',
    kind: 'WorkflowTemplate',
    metadata: { id: 'long' },
    spec: {
      requires: ['tool:*'],
      nodes: [
        { id: 'start', uses: 'core.start@1' },
        { id: 'each', uses: 'core.foreach@1', config: { maxItems: items, maxConcurrency: 16, body: { uses: 'tool.call@1', config: { tool: 'index', idempotent: true } } }, inputs: { items: { source: 'input', path: '/items' } } },
        { id: 'end', uses: 'core.end@1', inputs: { n: { source: 'output', nodeId: 'each', path: '/failures' } } },
      ],
      edges: [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'end' },
      ],
    },
  };
}

/** A store that counts what `load` hands to the engine. */
function countingStore(inner: any) {
  const counts = { loads: 0, bytes: 0, events: 0, checkpointBytes: 0 };
  return {
    counts,
    store: {
      commit: (e: any) => inner.commit(e),
      load(runId: string) {
        const tail = inner.load(runId);
        counts.loads += 1;
        if (tail) {
          counts.bytes += tail.events.byteLength + (tail.checkpoint?.byteLength ?? 0) + tail.plan.byteLength;
          counts.checkpointBytes += tail.checkpoint?.byteLength ?? 0;
          counts.events += tail.events.byteLength === 0 ? 0 : new TextDecoder().decode(tail.events).split('\n').length;
        }
        return tail;
      },
      readEvents: (r: string, a: number, l: number) => inner.readEvents(r, a, l),
      getRun: (r: string) => inner.getRun(r),
      listRuns: (f: any) => inner.listRuns(f),
      close: () => inner.close(),
    },
  };
}

async function settledSeq(store: any, runId: string): Promise<number> {
  // The first host stops answering; wait until its last activations have been committed.
  let last = -1;
  for (let still = 0; still < 50; ) {
    await new Promise((r) => setImmediate(r));
    const seq = store.getRun(runId)?.lastSeq ?? 0;
    still = seq === last ? still + 1 : 0;
    last = seq;
  }
  return last;
}

it('a cold resume reads the latest checkpoint and at most one interval of events; a hot run never loads', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'long-run-'));
  const file = join(dir, 'workflow.db');
  const runId = 'run-long';
  let calls = 0;
  const index = { idempotent: true, execute: (input: number) => ({ n: input }) };
  const first = SqliteJournalStore.open(file, { durability: 'normal' });
  const registry = registryGateway({ tools: { index } });
  const h1 = await buildHost({
    store: first,
    gateway: {
      effects: () => registry.effects(),
      execute(req: any, ctx: any) {
        calls += 1;
        // The process "dies" here: later calls never answer, as after a crash.
        return calls > answeredBeforeCrash ? new Promise(() => undefined) : registry.execute(req, ctx);
      },
    },
  });
  const plan = h1.compile(template());
  await h1.kernel.launch({ runId, plan, templateKey: plan.root, input: { items: Array.from({ length: items }, (_, i) => i) }, authority: everything });
  const crashedAt = await settledSeq(first, runId);
  const journalBytes = allEvents(first, runId).reduce((n: number, e: unknown) => n + JSON.stringify(e).length, 0);
  expect(crashedAt).toBeGreaterThan(10_000);

  // A new engine instance over the reopened store: the run is cold.
  const { store, counts } = countingStore(SqliteJournalStore.open(file, { durability: 'normal' }));
  const h2 = await buildHost({ store, gateway: registryGateway({ tools: { index } }) });
  await h2.kernel.resume(runId, 'test', everything);
  const cold = { ...counts };
  console.log(`cold resume of a run at seq ${crashedAt}: load called ${cold.loads}x, ${cold.events} events after the checkpoint, ${cold.bytes} bytes (checkpoint ${cold.checkpointBytes}); the whole journal is ${journalBytes} bytes`);
  expect(cold.loads).toBe(1);
  // Events after the checkpoint: fewer than one interval plus one activation's worth.
  expect(cold.events).toBeLessThan(checkpointInterval(crashedAt - cold.events) + 200);
  expect(cold.bytes - cold.checkpointBytes).toBeLessThan(journalBytes / 6);

  // From here on the run is hot: finishing it takes many activations and no load at all.
  const outcome = await h2.kernel.waitFor(runId, false);
  expect(outcome.status).toBe('completed');
  const seqAtEnd = store.getRun(runId).lastSeq;
  console.log(`hot activations from seq ${crashedAt} to ${seqAtEnd}: load called ${counts.loads - cold.loads} more times`);
  expect(seqAtEnd).toBeGreaterThan(crashedAt);
  expect(counts.loads).toBe(cold.loads);
  expect(h2.replay(runId).identical).toBe(true);
  first.close();
  store.close();
}, 300_000);

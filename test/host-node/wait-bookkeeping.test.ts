// A long-lived process keeps no bookkeeping per finished wait or ended run: every `result` a
// caller awaited leaves no poll timer and no loss listener behind in the kernel (they used to pile
// up, one timer per run ever awaited, ~200 bytes each), and an ended run leaves its id in no set
// of the kernel (`known` kept every run id the process ever ran).
import { describe, expect, it } from 'vitest';
import { chain, openRuntime } from '../helpers/node-host.js';

const twoTools = chain('two-tools', [
  { id: 'a', uses: 'tool.call@1', config: { tool: 'noop' } },
  { id: 'b', uses: 'tool.call@1', config: { tool: 'noop' } },
], { requires: ['tool:noop'] });

interface KernelBookkeeping {
  polls: Set<unknown>;
  lossListeners: Map<string, unknown>;
  listeners: Map<string, unknown>;
  known: Set<string>;
}

describe('waits on runs', () => {
  it('leave no poll timers or listeners behind once their runs ended', async () => {
    const rt = await openRuntime({ tools: { noop: { execute: () => ({ ok: true }) } } });
    try {
      const kernel = (rt as unknown as { kernel: KernelBookkeeping }).kernel;
      const handles = await Promise.all(Array.from({ length: 40 }, () => rt.launch(twoTools, { input: {} })));
      const outcomes = await Promise.all(handles.map((h) => h.result));
      expect(outcomes.map((o) => o.status)).toEqual(Array(40).fill('completed'));
      // A second wait on an ended run is answered from the store.
      expect((await (await rt.resume(handles[0].runId)).result).status).toBe('completed');
      expect(kernel.polls.size).toBe(0);
      expect(kernel.lossListeners.size).toBe(0);
      expect(kernel.listeners.size).toBe(0);
    } finally {
      await rt.close();
    }
  });

  it('keep the id of a run that goes on and drop it once the run ended', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const rt = await openRuntime({ tools: { noop: { execute: () => ({ ok: true }) }, hold: { execute: () => held.then(() => ({ ok: true })) } } });
    try {
      const kernel = (rt as unknown as { kernel: KernelBookkeeping }).kernel;
      const holding = chain('holding', [{ id: 'h', uses: 'tool.call@1', config: { tool: 'hold' } }], { requires: ['tool:hold'] });
      const waiting = await rt.launch(holding, { input: {} });
      const ended = await Promise.all(Array.from({ length: 20 }, () => rt.launch(twoTools, { input: {} })));
      await Promise.all(ended.map((h) => h.result));
      // Its call is in flight here: a later activation of it must not be taken for one after a restart.
      expect([...kernel.known]).toEqual([waiting.runId]);
      release();
      expect((await waiting.result).status).toBe('completed');
      expect(kernel.known.size).toBe(0);
      // A stopped worker is forgotten by its runtime; a running one is stopped by `close`.
      const workers = (rt as unknown as { workers: Set<unknown> }).workers;
      await (await rt.startWorker({ idlePollMs: 20 })).stop();
      expect(workers.size).toBe(0);
      await rt.startWorker({ idlePollMs: 20 });
      expect(workers.size).toBe(1);
      // An ended run asked to resume stays as it was: nothing is appended to its journal.
      const before = (await rt.getRun(ended[0].runId))!.lastSeq;
      expect((await (await rt.resume(ended[0].runId)).result).status).toBe('completed');
      expect((await rt.getRun(ended[0].runId))!.lastSeq).toBe(before);
    } finally {
      await rt.close();
    }
  });
});

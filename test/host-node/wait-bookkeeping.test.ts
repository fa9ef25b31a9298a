// A long-lived process keeps no bookkeeping per finished wait: every `result` a caller awaited
// leaves no poll timer and no loss listener behind in the kernel (they used to pile up, one timer
// per run ever awaited, ~200 bytes each).
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
});

// A launch whose run id was drawn at random here starts without reading the store for a run of
// that id; a run id a caller names is still looked up, so launching it twice is refused typed.
import { describe, expect, it } from 'vitest';
import { chain, openRuntime } from '../helpers/node-host.js';

/** Counts the store's synchronous loads per run id (the engine's check for an existing run). */
function countLoads(rt: any): Map<string, number> {
  const loads = new Map<string, number>();
  const load = rt.store.loadSync.bind(rt.store);
  rt.store.loadSync = (runId: string) => {
    loads.set(runId, (loads.get(runId) ?? 0) + 1);
    return load(runId);
  };
  return loads;
}

describe('run ids drawn at random', () => {
  it('starts a run with a random id without a store read for it', async () => {
    const rt = await openRuntime();
    try {
      const loads = countLoads(rt);
      const handle = await rt.launch(chain('fresh', []), { input: {} });
      expect((await handle.result).status).toBe('completed');
      expect(loads.get(handle.runId)).toBeUndefined();
    } finally {
      await rt.close();
    }
  });

  it('looks a named run id up, and refuses to start it twice', async () => {
    const rt = await openRuntime();
    try {
      const loads = countLoads(rt);
      const first = await rt.launch(chain('named', []), { input: {}, runId: 'run-named-1' });
      expect((await first.result).status).toBe('completed');
      expect(loads.get('run-named-1')).toBe(1);
      await expect(rt.launch(chain('named', []), { input: {}, runId: 'run-named-1' })).rejects.toMatchObject({ code: 'engine.run-exists' });
    } finally {
      await rt.close();
    }
  });
});

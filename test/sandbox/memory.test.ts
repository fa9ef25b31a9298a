import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptEvaluator } from '../../sandbox/index.js';

const mib = 1024 * 1024;
let ev: ScriptEvaluator;
beforeAll(async () => {
  ev = await ScriptEvaluator.create();
});
afterAll(() => ev.dispose());

const code = (r: ReturnType<ScriptEvaluator['evaluate']>) => (r.ok ? `ok ${r.output}` : r.error.code);

describe('memoryBytes bounds the linear memory a script can take', () => {
  // About 96 MiB of arrays kept alive: QuickJS's own accounting let this pass at 8 MiB.
  const keep = 'const a = []; for (let i = 0; i < 3000; i++) a.push(new Array(4096).fill(7)); return a.length';

  it('refuses what does not fit in memoryBytes, and the module does not grow past the bound', () => {
    expect(code(ev.evaluate(keep, 'null', { memoryBytes: 8 * mib, fuel: 5000 }))).toBe('script.memory');
    expect(ev.diagnostics().wasmMemoryBytes).toBeLessThanOrEqual(16 * mib + 8 * mib);
  });

  it('gives the same verdict on a warm evaluator and on a fresh one', async () => {
    const fits = 'const a = []; for (let i = 0; i < 150; i++) a.push(new Array(4096).fill(7)); return a.length'; // ~5 MiB
    const warm = ev.evaluate(fits, 'null', { memoryBytes: 8 * mib });
    const fresh = await ScriptEvaluator.create();
    try {
      expect(fresh.evaluate(fits, 'null', { memoryBytes: 8 * mib })).toEqual(warm);
      expect(code(warm)).toBe('ok 150');
    } finally {
      fresh.dispose();
    }
  });

  it('drops a module that grew past the retain bound even when the script succeeded', () => {
    const grow = 'const a = []; for (let i = 0; i < 1500; i++) a.push(new Array(4096).fill(7)); return a.length'; // ~48 MiB
    expect(code(ev.evaluate(grow, 'null', { memoryBytes: 64 * mib, fuel: 5000 }))).toBe('ok 1500');
    expect(ev.diagnostics().wasmMemoryBytes).toBeLessThanOrEqual(32 * mib);
  });

  it('a script that throws null is not mistaken for an out-of-memory failure, and a real one still is', () => {
    expect(code(ev.evaluate('throw null', 'null'))).toBe('script.runtime');
    expect(code(ev.evaluate('const m = new Map(); for (let i = 0; ; i++) m.set(i, { i })', 'null', { memoryBytes: 8 * mib, fuel: 5000 }))).toBe('script.memory');
  });
});

// #8: one bad input must not brick a long-lived runtime. Values that are not JSON, or nested
// deeper than the engine can parse, are refused before they cross with a typed error; and after
// a trap every entry point finds a live engine again.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jsonInputLimits } from '../../dist/hosts/core/json-input.js';
import { examplePath } from '../helpers/cli.js';
import { openRuntime } from '../helpers/node-host.js';

const echo = JSON.parse(readFileSync(examplePath('echo/echo.json'), 'utf8'));
const tools = { echo: { idempotent: true, execute: (input: any) => ({ text: input.text }) } };

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

/**
 * Makes the live component instance's next `describe` fail the way a trap does (an exception
 * without the engine's error payload). A fresh instance is built from the component again, so
 * the fault is gone once the instance has been replaced.
 */
function poisonInstance(rt: { engine: unknown }): void {
  const live = (rt.engine as { exports: { describe(): string } }).exports;
  live.describe = () => {
    throw new RangeError('unreachable executed');
  };
}

const cyclic: Record<string, unknown> = { text: 'x' };
cyclic.self = cyclic;

const badInputs: [string, unknown][] = [
  ['a cycle', cyclic],
  ['a BigInt', { text: 'x', n: 10n }],
  ['a function', { text: 'x', f: () => 1 }],
  ['undefined in an array', { text: 'x', list: [undefined] }],
  ['NaN', { text: 'x', n: Number.NaN }],
  ['Infinity', { text: 'x', n: Number.POSITIVE_INFINITY }],
  ['nesting 100,000 deep', { text: 'x', d: nested(100_000) }],
  ['a Map', { text: 'x', m: new Map() }],
  ['input over runInputBytesMax', { text: 'x'.repeat(1_048_577) }],
];

describe('bad input never reaches the engine', () => {
  it('refuses each with run.input-invalid and keeps launching and validating', async () => {
    const rt = await openRuntime({ tools });
    try {
      for (const [what, input] of badInputs) {
        await expect(rt.launch(echo, { input }), what).rejects.toMatchObject({ code: 'run.input-invalid' });
        expect(rt.engine.dead, what).toBe(false);
      }
      expect((await rt.validate(echo)).ok).toBe(true);
      const run = await rt.launch(echo, { input: { text: 'still alive' } });
      expect(await run.settled()).toMatchObject({ status: 'completed', output: { echoed: 'still alive' } });
    } finally {
      await rt.close();
    }
  });

  it('refuses over-deep and non-JSON templates with template.not-json', async () => {
    const rt = await openRuntime({ tools });
    try {
      await expect(rt.validate('['.repeat(100_000) + ']'.repeat(100_000))).rejects.toThrow(expect.objectContaining({ code: 'template.not-json' }));
      const deep = { ...echo, spec: { ...echo.spec, inputSchema: nested(100_000) } };
      await expect(rt.validate(deep)).rejects.toThrow(expect.objectContaining({ code: 'template.not-json' }));
      await expect(rt.compile(deep)).rejects.toThrow(expect.objectContaining({ code: 'template.not-json' }));
      await expect(rt.launch(deep, { input: { text: 'x' } })).rejects.toMatchObject({ code: 'template.not-json' });
      expect(rt.engine.dead).toBe(false);
      expect((await (await rt.launch(echo, { input: { text: 'ok' } })).settled()).status).toBe('completed');
    } finally {
      await rt.close();
    }
  });

  it("keeps the host's bounds in step with the engine's", async () => {
    const rt = await openRuntime();
    try {
      const engine = rt.engine.describe().limits as Record<string, number>;
      expect(jsonInputLimits.runInputBytesMax).toBe(engine.runInputBytesMax);
      expect(jsonInputLimits.runInputDepthMax).toBe(engine.nodeOutputDepthMax);
    } finally {
      await rt.close();
    }
  });
});

describe('after a trap', () => {
  it('validate, compile and launch work again without a manual revive', async () => {
    const rt = await openRuntime({ tools });
    try {
      const plan = await rt.compile(echo);
      poisonInstance(rt);
      expect(() => rt.engine.describe()).toThrow(expect.objectContaining({ code: 'engine.trap' }));
      // Being rebuilt: a synchronous call says so with a typed, retryable error.
      expect(() => rt.engine.validate(JSON.stringify(echo))).toThrow(expect.objectContaining({ code: 'engine.reviving' }));
      // launch waits for the fresh instance itself.
      const run = await rt.launch(echo, { input: { text: 'after a trap' } });
      expect(await run.settled()).toMatchObject({ status: 'completed', output: { echoed: 'after a trap' } });
      expect((await rt.validate(echo)).ok).toBe(true);
      expect((await rt.compile(echo)).planHash).toBe(plan.planHash);

      poisonInstance(rt);
      expect(() => rt.engine.describe()).toThrow(expect.objectContaining({ code: 'engine.trap' }));
      await rt.engine.ready();
      expect(rt.engine.describe()).toMatchObject({ engineVersion: expect.any(String) });
      expect(rt.engine.dead).toBe(false);
      expect((await rt.validate(echo)).ok).toBe(true);
    } finally {
      await rt.close();
    }
  });
});

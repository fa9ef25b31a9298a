import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptEvaluator } from '../../sandbox/index.js';
import { adversarialCases } from './adversarial-cases.js';

let ev: ScriptEvaluator;
beforeAll(async () => {
  ev = await ScriptEvaluator.create();
});
afterAll(() => ev.dispose());

describe('adversarial scripts end in their expected outcome', () => {
  for (const c of adversarialCases) {
    it(c.name, () => {
      const r = ev.evaluate(c.source, c.input ?? 'null', c.limits);
      if ('code' in c.expect) expect(r.ok ? { ok: r.output } : { code: r.error.code }).toEqual(c.expect);
      else expect(r.ok ? { ok: r.output } : r.error).toEqual(c.expect);
    });
  }

  it('gives the same outcomes in a second pass and the host still answers', () => {
    const first = adversarialCases.map((c) => ev.evaluate(c.source, c.input ?? 'null', c.limits));
    const second = adversarialCases.map((c) => ev.evaluate(c.source, c.input ?? 'null', c.limits));
    expect(second).toEqual(first);
    expect(ev.evaluate('return input + 1', '41')).toEqual({ ok: true, output: '42', fuelUsed: 0 });
  });
});

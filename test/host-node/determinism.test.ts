// The built component is deterministic: the same activations give byte-identical commits and
// gateway requests in two fresh instances, and no clock or randomness reaches the events.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EngineInstance } from '../../dist/hosts/core/engine-instance.js';
import { nodeComponentLoader } from '../../dist/hosts/node/sdk/component.js';
import { createScriptImports } from '../../dist/hosts/node/sdk/sandbox.js';
import { loadCase } from '../helpers/cases.js';

const decoder = new TextDecoder();

async function freshEngine() {
  const scripts = await createScriptImports();
  const committed = new Map<string, { plan: Uint8Array; events: Uint8Array[]; lastSeq: number }>();
  const engine = await EngineInstance.create(nodeComponentLoader(), {
    load: () => undefined,
    ...scripts,
    log: () => undefined,
  });
  return { engine, committed, scripts };
}

/** Drives a run to its end with scripted tool results; returns everything that crossed the boundary. */
async function drive(now: number): Promise<string[]> {
  const { engine, scripts } = await freshEngine();
  const c = await loadCase('foreach-tools-continue');
  const trace: string[] = [];
  const plan = engine.compile({ root: { template: c.template } });
  let out = engine.activate({ runId: 'run-determinism', now, facts: [{ type: 'run-requested', input: c.input, authority: { id: 'test', scopes: ['*'] } }], plan });
  const record = (o: typeof out) => {
    trace.push(JSON.stringify(o.summary));
    for (const commit of o.commits) trace.push(decoder.decode(commit.events), commit.checkpoint ? decoder.decode(commit.checkpoint) : '-');
    for (const r of o.requests) trace.push(JSON.stringify(r));
  };
  record(out);
  let pending = out.requests;
  for (let step = 1; pending.length > 0; step++) {
    const next: typeof pending = [];
    for (const r of pending) {
      const ok = r.input !== 'missing';
      out = engine.activate({
        runId: 'run-determinism',
        now: now + step,
        facts: [ok ? { type: 'capability-completed', invocationId: r.invocationId, ok: true, output: { id: r.input } } : { type: 'capability-completed', invocationId: r.invocationId, ok: false, error: { code: 'lookup.not-found', message: 'no', retryable: false } }],
      });
      record(out);
      next.push(...out.requests);
    }
    pending = next;
  }
  scripts.evaluator.dispose();
  return trace;
}

describe('determinism of the built component', () => {
  it('gives byte-identical commits and requests in two fresh instances', async () => {
    const a = await drive(1_700_000_000_000);
    const b = await drive(1_700_000_000_000);
    expect(a.length).toBeGreaterThan(10);
    expect(b).toEqual(a);
    expect(a.join('\n')).toContain('"status":"completed"');
  });

  it('takes every time from the activation and nothing from a clock', async () => {
    const early = await drive(0);
    const late = await drive(4_102_444_800_000);
    const times = (trace: string[]) => [...trace.join('\n').matchAll(/"occurredAt":"([^"]+)"/g)].map((m) => m[1]);
    expect(times(early).length).toBeGreaterThan(10);
    for (const t of times(early)) expect(t.startsWith('1970-01-01T00:00:00')).toBe(true);
    for (const t of times(late)) expect(t.startsWith('2100-01-01T00:00:00')).toBe(true);
    // Everything but the times is the same: ids derive from the run id and the plan only.
    const strip = (trace: string[]) => trace.map((s) => s.replace(/"occurredAt":"[^"]+"/g, '').replace(/"(timeoutAt|retryAt|deadlineAt|wakeAt|clock)":\d+/g, ''));
    expect(strip(late)).toEqual(strip(early));
  });

  it('bundles no call to a clock or a random source', () => {
    const bundle = readFileSync(new URL('../../dist/engine-bundle-quickjs.js', import.meta.url), 'utf8');
    for (const leak of ['Date.now(', 'Math.random(', 'performance.now(', 'crypto.getRandomValues(', 'setTimeout(', 'new Date()']) {
      expect(bundle.includes(leak), `engine bundle calls ${leak}`).toBe(false);
    }
  });
});

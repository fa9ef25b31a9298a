// The engine's digests come from the host (`digest.sha256` in the WIT): the Node host's native
// SHA-256 and the portable one a page uses give the same plan hash and the same journal, and the
// engine really asks the host rather than hashing in its own JavaScript.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EngineInstance } from '../../dist/hosts/core/engine-instance.js';
import { nodeComponentLoader } from '../../dist/hosts/node/sdk/component.js';
import { sha256Hex } from '../../dist/hosts/shared/digest.js';
import { loadCase } from '../helpers/cases.js';

const decoder = new TextDecoder();

async function engineWith(sha256?: (text: string) => string) {
  return EngineInstance.create(nodeComponentLoader(), {
    load: () => undefined,
    evaluateScript: () => ({ ok: false, error: { code: 'script.runtime', message: 'no scripts here' } }),
    checkScriptSyntax: () => undefined,
    log: () => undefined,
    ...(sha256 ? { sha256Hex: sha256 } : {}),
  });
}

/** Compiles the echo case and runs it to its end; returns the plan hash and every committed event. */
async function run(engine: EngineInstance) {
  const c = await loadCase('echo-tool');
  const plan = engine.compile({ root: { template: c.template } });
  let out = engine.activate({ runId: 'run-digests', now: 1_700_000_000_000, facts: [{ type: 'run-requested', input: c.input, authority: { id: 'test', scopes: ['*'] } }], plan });
  const events = out.commits.map((commit) => decoder.decode(commit.events));
  for (const r of out.requests) {
    out = engine.activate({ runId: 'run-digests', now: 1_700_000_000_001, facts: [{ type: 'capability-completed', invocationId: r.invocationId, output: { echoed: 'x'.repeat(300) } }] });
    events.push(...out.commits.map((commit) => decoder.decode(commit.events)));
  }
  return { planHash: plan.planHash, events: events.join('\n') };
}

describe('the digest import', () => {
  it('gives the same plan hash and journal with the native and the portable SHA-256', async () => {
    const calls: string[] = [];
    const native = await run(await engineWith((text) => {
      calls.push(text);
      return sha256Hex(text);
    }));
    const portable = await run(await engineWith());
    expect(native.planHash).toBe(portable.planHash);
    expect(native.events).toBe(portable.events);
    expect(native.events).toContain(native.planHash);
    // The engine asked the host, and the plan hash is the SHA-256 of one of the texts it handed over.
    expect(calls.length).toBeGreaterThan(1);
    expect(calls.some((text) => native.planHash.endsWith(createHash('sha256').update(text).digest('hex')))).toBe(true);
  });

  it('journals what the host answers (a wrong digest shows up, so the import is not decorative)', async () => {
    const wrong = await run(await engineWith(() => '0'.repeat(64)));
    expect(wrong.planHash).toContain('0'.repeat(64));
  });
});

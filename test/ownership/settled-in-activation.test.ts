// One activation can request a call and, through a later fact of the same activation, abandon it:
// a worker that takes a run over applies the operator's "retry" from the inbox (a new attempt,
// `capability.requested`) and its own takeover resume (`afterRestart`, which abandons every call
// in flight, the new one included) together. The commit then says the call never ran, so the
// host must not run it. The oracle is the tool's own call list.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EngineInstance } from '../../dist/hosts/core/engine-instance.js';
import { Kernel } from '../../dist/hosts/core/kernel.js';
import { nodeComponentLoader } from '../../dist/hosts/node/component.js';
import { registryGateway } from '../../dist/hosts/node/gateway.js';
import { openJournalStore } from '../../dist/hosts/node/open-store.js';
import { sha256Hex } from '../../dist/hosts/shared/digest.js';
import { chain } from '../helpers/node-host.js';

const everything = { id: 'local', scopes: ['*'] };

describe('a call requested and abandoned by one activation', () => {
  it('is not carried out: the tool is never called for it', async () => {
    const store = await openJournalStore(join(mkdtempSync(join(tmpdir(), 'adw-settled-')), 'workflow.db'));
    const calls: string[] = [];
    const engine = await EngineInstance.create(nodeComponentLoader(), { load: (runId) => store.loadSync!(runId), evaluateScript: () => ({ ok: false, error: { code: 'script.runtime', message: 'none' } }), checkScriptSyntax: () => undefined, sha256Hex, log: () => undefined });
    // A charge that never answers: its first attempt stays in flight until the "restart".
    const gateway = registryGateway({ tools: { charge: { execute: (_input: unknown, ctx: { invocationId: string }) => (calls.push(ctx.invocationId), new Promise(() => {})) } } } as never);
    const kernel = new Kernel({ store: store as never, engine, gateway, log: () => undefined, authority: () => everything, flushMode: 'manual' });
    const plan = engine.compile({ root: { template: chain('charge', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } }], { requires: ['tool:charge'] }) } });
    const runId = 'run-settled-in-activation';
    try {
      const launched = kernel.launch({ runId, plan, input: {}, authority: everything });
      await kernel.flush();
      await launched;
      await new Promise((r) => setTimeout(r, 20));
      expect(calls).toHaveLength(1);

      // A restart: the first attempt's outcome is unknown, the node needs attention.
      const restarted = kernel.deliver(runId, { type: 'resume-requested', by: 'recovery', afterRestart: true, effects: {} });
      await kernel.flush();
      expect(await restarted).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });

      // The operator's retry and a takeover's resume, applied in one activation.
      const retried = kernel.deliver(runId, { type: 'outcome-resolved', nodeId: 'charge', resolution: 'retry', by: 'operator' });
      const takenOver = kernel.deliver(runId, { type: 'resume-requested', by: 'worker', afterRestart: true, effects: {} });
      await kernel.flush();
      await Promise.all([retried, takenOver]);
      await new Promise((r) => setTimeout(r, 50));

      const events = (await store.readEvents(runId, 0, 1000)).events.map((e: string) => JSON.parse(e));
      const requested = events.filter((e: any) => e.type === 'capability.requested').map((e: any) => e.payload.invocationId);
      const abandoned = events.filter((e: any) => e.type === 'capability.abandoned').map((e: any) => e.payload.invocationId);
      // The second attempt was requested and abandoned in one commit, and never ran.
      expect(requested).toHaveLength(2);
      expect(abandoned).toEqual(requested);
      const second = events.filter((e: any) => e.payload?.invocationId === requested[1]);
      expect(new Set(second.map((e: any) => e.origin.activation)).size).toBe(1);
      expect(calls).toEqual([requested[0]]);
    } finally {
      await kernel.close?.();
      await store.close();
    }
  });
});

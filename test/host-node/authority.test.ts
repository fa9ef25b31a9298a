// The authority a run acts under is the one resolved at the moment of each activation, and the
// tools it calls see that authority.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, tempDir } from '../helpers/node-host.js';

function gatedCharge() {
  const t = chain('gated-charge', [
    { id: 'gate', uses: 'human.approval@1', config: { prompt: 'Charge?' } },
    { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } },
  ]);
  t.spec.requires = ['approval', 'tool:charge'];
  return t;
}

describe('authority of the moment', () => {
  it('an approval given in a new process after the resolver revoked a scope runs the next node under the new authority', async () => {
    const dir = tempDir();
    const log = join(dir, 'charges.log');
    const charge = () => (appendFileSync(log, 'charged\n'), { charged: true });
    const first = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { charge }, authorities: { id: 'billing', scopes: ['approval', 'tool:charge'] } });
    const handle = await first.launch(gatedCharge());
    expect(await handle.settled()).toMatchObject({ status: 'paused', pausedReason: 'approval' });
    await first.close();

    const second = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { charge }, authorities: () => ({ id: 'billing-revoked', scopes: ['approval'] }) });
    try {
      await second.approve(handle.runId, 'gate', { by: 'alice' });
      const outcome = await second.follow(handle.runId).result;
      expect(outcome.status).toBe('failed');
      expect((outcome.error?.detail as any).error).toMatchObject({ code: 'capability.denied', message: expect.stringContaining('authority billing-revoked does not grant tool:charge') });
      expect(existsSync(log) ? readFileSync(log, 'utf8') : '').toBe('');
      const events = (await second.readEvents(handle.runId)).events;
      expect(events.some((e) => e.type === 'capability.requested' && e.payload.name === 'charge')).toBe(false);
      expect((await second.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await second.close();
    }
  });

  it('tools see the authority they run under: the one of launch, then the one resolved at the approval', async () => {
    const seen: { node: string; authority: unknown }[] = [];
    const record = (_input: unknown, ctx: { nodeId: string; authority?: unknown }) => (seen.push({ node: ctx.nodeId, authority: ctx.authority }), { ok: true });
    let current = { id: 'launch-time', scopes: ['approval', 'tool:record'] };
    const rt = await WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, tools: { record }, authorities: () => current });
    try {
      const t = chain('sees-authority', [
        { id: 'before', uses: 'tool.call@1', config: { tool: 'record' } },
        { id: 'gate', uses: 'human.approval@1' },
        { id: 'after', uses: 'tool.call@1', config: { tool: 'record' } },
      ]);
      t.spec.requires = ['approval', 'tool:record'];
      const handle = await rt.launch(t);
      expect((await handle.settled()).status).toBe('paused');
      current = { id: 'approval-time', scopes: ['approval', 'tool:*'] };
      await rt.approve(handle.runId, 'gate', { by: 'alice' });
      expect((await handle.result).status).toBe('completed');
      expect(seen).toEqual([
        { node: 'before', authority: { id: 'launch-time', scopes: ['approval', 'tool:record'] } },
        { node: 'after', authority: { id: 'approval-time', scopes: ['approval', 'tool:*'] } },
      ]);
      // The authority reaches tools in memory only: `capability.requested` is as before.
      const requested = (await rt.readEvents(handle.runId)).events.filter((e) => e.type === 'capability.requested');
      expect(requested.every((e) => e.payload.authority === undefined)).toBe(true);
      expect((await rt.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it('a safe call in flight at a restart is reissued only when the authority of the resume still grants it', async () => {
    const dir = tempDir();
    const log = join(dir, 'lookups.log');
    const lookup = { readOnly: true, execute: () => (appendFileSync(log, 'lookup\n'), new Promise(() => undefined)) };
    const t = chain('reissue', [{ id: 'lookup', uses: 'tool.call@1', config: { tool: 'lookup' } }]);
    t.spec.requires = ['tool:lookup'];
    const first = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { lookup }, authorities: { id: 'reader', scopes: ['tool:lookup'] } });
    const handle = await first.launch(t);
    for (let i = 0; i < 100 && !existsSync(log); i++) await new Promise((r) => setTimeout(r, 20));
    await first.close();
    expect(readFileSync(log, 'utf8')).toBe('lookup\n');

    const second = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { lookup }, authorities: () => ({ id: 'nobody', scopes: [] }) });
    try {
      const resumed = await second.resume(handle.runId, { by: 'ops' });
      const outcome = await Promise.race([resumed.result, new Promise<undefined>((r) => setTimeout(() => r(undefined), 3000))]);
      expect(readFileSync(log, 'utf8')).toBe('lookup\n');
      expect(outcome?.status).toBe('failed');
      expect((outcome?.error?.detail as any).error).toMatchObject({ code: 'capability.denied', message: expect.stringContaining('authority nobody does not grant tool:lookup') });
      const events = (await second.readEvents(handle.runId)).events;
      expect(events.filter((e) => e.type === 'capability.requested').map((e) => e.payload.reissued ?? false)).toEqual([false]);
      expect((await second.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await second.close();
    }
  });
});

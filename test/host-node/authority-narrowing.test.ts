// A launch that asks for less than the deployment grants gets what it asked for (or less),
// journaled as such, and keeps it at every resume: without an `authorities` resolver, and with a
// fixed one. A trigger binding's authority reference resolves to nothing it did not ask for.
import { describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, tempDir } from '../helpers/node-host.js';

function echoGateCharge() {
  const t = chain('echo-gate-charge', [
    { id: 'echo', uses: 'tool.call@1', config: { tool: 'echo' } },
    { id: 'gate', uses: 'human.approval@1' },
    { id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' } },
  ]);
  t.spec.requires = ['approval', 'tool:echo', 'tool:charge'];
  return t;
}

async function journaled(rt: any, runId: string) {
  const events = (await rt.readEvents(runId)).events;
  return {
    accepted: events.find((e: any) => e.type === 'run.accepted').payload.authority,
    resumed: events.filter((e: any) => e.type === 'run.resumed').map((e: any) => e.payload.authority ?? null),
    requested: events.filter((e: any) => e.type === 'capability.requested' && e.payload.kind === 'tool').map((e: any) => e.payload.name),
  };
}

describe('authority is never wider than asked', () => {
  it('without a resolver, a launch as bob with tool:echo is journaled as bob, and a tool outside his scopes is refused after the approval', async () => {
    const charged: unknown[] = [];
    const rt = await WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, tools: { echo: (i: unknown) => i, charge: (i: unknown) => (charged.push(i), { ok: true }) } });
    try {
      const handle = await rt.launch(echoGateCharge(), { authority: { id: 'bob', scopes: ['tool:echo', 'approval'] } });
      expect(await handle.settled()).toMatchObject({ status: 'paused', pausedReason: 'approval' });
      await rt.approve(handle.runId, 'gate', { by: 'alice' });
      const outcome = await rt.follow(handle.runId).result;
      expect(outcome.status).toBe('failed');
      expect((outcome.error?.detail as any).error).toEqual({ code: 'capability.denied', message: 'authority bob does not grant tool:charge', retryable: false });
      expect(charged).toEqual([]);
      expect(await journaled(rt, handle.runId)).toEqual({ accepted: { id: 'bob', scopes: ['tool:echo', 'approval'] }, resumed: [null], requested: ['echo'] });
    } finally {
      await rt.close();
    }
  });

  it('a resume in a new process keeps the narrower authority of launch', async () => {
    const dir = tempDir();
    const tools = { echo: (i: unknown) => i, charge: () => ({ ok: true }) };
    const first = await WorkflowRuntime.open({ dir, log: () => undefined, tools });
    const handle = await first.launch(echoGateCharge(), { authority: { id: 'bob', scopes: ['tool:*', 'approval'] } });
    expect((await handle.settled()).status).toBe('paused');
    await first.close();
    const second = await WorkflowRuntime.open({ dir, log: () => undefined, tools });
    try {
      const [resumed] = await second.recoverPending({ by: 'ops' });
      expect(resumed).toMatchObject({ runId: handle.runId, status: 'paused' });
      expect(await journaled(second, handle.runId)).toEqual({ accepted: { id: 'bob', scopes: ['tool:*', 'approval'] }, resumed: [null], requested: ['echo'] });
    } finally {
      await second.close();
    }
  });

  it("a binding's authority reference with no resolver runs with no scopes: its first tool is refused", async () => {
    const rt = await WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, tools: { echo: (i: unknown) => i } });
    try {
      const t = chain('hooked', [{ id: 'echo', uses: 'tool.call@1', config: { tool: 'echo' } }]);
      t.spec.requires = ['tool:echo'];
      // The shape the ingress passes for `"authority": "hooks"`.
      const handle = await rt.launch(t, { authority: { id: 'hooks', scopes: [] } });
      const outcome = await handle.result;
      expect(outcome.status).toBe('failed');
      expect((outcome.error?.detail as any).error).toEqual({ code: 'capability.denied', message: 'authority hooks does not grant tool:echo', retryable: false });
      expect(await journaled(rt, handle.runId)).toEqual({ accepted: { id: 'hooks', scopes: [] }, resumed: [], requested: [] });
    } finally {
      await rt.close();
    }
  });

  it('a fixed authority is a grant: a request gets the intersection of its scopes with it', async () => {
    const rt = await WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, tools: { echo: (i: unknown) => i }, authorities: { id: 'team', scopes: ['tool:echo', 'approval'] } });
    try {
      const t = chain('granted', [{ id: 'echo', uses: 'tool.call@1', config: { tool: 'echo' } }]);
      t.spec.requires = ['tool:echo'];
      const asked = [
        { id: 'bob', scopes: ['tool:*', 'agent:writer'] },
        { id: 'carol', scopes: ['*'] },
        { id: 'dave', scopes: ['approval', 'approval'] },
      ];
      const got = [];
      for (const authority of asked) {
        const handle = await rt.launch(t, { authority });
        await handle.result;
        got.push((await journaled(rt, handle.runId)).accepted);
      }
      expect(got).toEqual([
        { id: 'bob', scopes: ['tool:echo'] },
        { id: 'carol', scopes: ['tool:echo', 'approval'] },
        { id: 'dave', scopes: ['approval'] },
      ]);
      const plain = await rt.launch(t);
      expect((await plain.result).status).toBe('completed');
      expect((await journaled(rt, plain.runId)).accepted).toEqual({ id: 'team', scopes: ['tool:echo', 'approval'] });
    } finally {
      await rt.close();
    }
  });

  it('a resolver that resolves nothing refuses the launch with authority.unresolved', async () => {
    const rt = await WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, authorities: () => undefined });
    try {
      await expect(rt.launch(chain('nothing', []), { authority: { id: 'hooks', scopes: [] } })).rejects.toMatchObject({ code: 'authority.unresolved', message: expect.stringMatching(/^no authority resolves for run \S+ \(asked for hooks\)$/) });
    } finally {
      await rt.close();
    }
  });
});

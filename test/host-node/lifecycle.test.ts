// Approvals, cancellation, time limits and resumes, including across processes.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';

const run = promisify(execFile);
const cli = new URL('../../dist/hosts/node/cli/main.js', import.meta.url).pathname;

async function agentWorkflow(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { cwd });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const lastJson = (stdout: string) => JSON.parse(stdout.trim().split('\n').pop()!);

describe('human approval', () => {
  it('pauses the run, and an approval given by another process long after resumes it', async () => {
    const dir = tempDir();
    const template = chain('approve-me', [
      { id: 'gate', uses: 'human.approval@1', config: { prompt: 'Deploy?' } },
      { id: 'after', uses: 'core.script@1', config: { source: "return 'approved by ' + input.by" }, inputs: { by: { source: 'output', nodeId: 'gate', path: '/by' } } },
    ]);
    template.spec.outputs = { message: { source: 'output', nodeId: 'after' } };
    template.spec.requires = ['approval'];
    writeFileSync(join(dir, 'approve.json'), JSON.stringify(template));

    const first = await agentWorkflow(['run', 'approve.json', '--dir', 'state'], dir);
    expect(first.code).toBe(4);
    const paused = lastJson(first.stdout);
    expect(paused).toMatchObject({ kind: 'RunResult', status: 'paused', pausedReason: 'approval' });

    const second = await agentWorkflow(['approve', paused.runId, 'gate', '--by', 'alice', '--dir', 'state'], dir);
    expect(second.code).toBe(0);
    expect(lastJson(second.stdout)).toMatchObject({ status: 'completed', output: { message: 'approved by alice' } });

    // Resuming a terminal run returns its result and starts nothing.
    const again = await agentWorkflow(['resume', paused.runId, '--dir', 'state'], dir);
    expect(again.code).toBe(0);
    expect(lastJson(again.stdout)).toMatchObject({ status: 'completed', seq: lastJson(second.stdout).seq });
    const runs = lastJson((await agentWorkflow(['runs', '--dir', 'state'], dir)).stdout);
    expect(runs.runs).toHaveLength(1);

    const trace = (await agentWorkflow(['trace', paused.runId, '--dir', 'state'], dir)).stdout.trim().split('\n').map((l) => JSON.parse(l));
    const resolved = trace.find((e) => e.type === 'capability.completed');
    expect(resolved.origin.actor).toBe('operator:alice');
    expect(resolved.payload.output).toMatchObject({ approved: true, by: 'alice' });
  });

  it('fails the run on a rejection, with who rejected it', async () => {
    const rt = await openRuntime();
    try {
      const template = chain('reject-me', [{ id: 'gate', uses: 'human.approval@1' }]);
      template.spec.requires = ['approval'];
      const handle = await rt.launch(template);
      expect((await handle.settled()).status).toBe('paused');
      await rt.reject(handle.runId, 'gate', { by: 'bob', comment: 'not today' });
      const outcome = await handle.result;
      expect(outcome.status).toBe('failed');
      expect((outcome.error?.detail as any).error).toMatchObject({ code: 'approval.rejected', message: expect.stringContaining('bob rejected gate: not today') });
    } finally {
      await rt.close();
    }
  });

  it('refuses to approve a node that is not waiting', async () => {
    const rt = await openRuntime();
    try {
      const handle = await rt.launch(chain('nothing', []));
      await handle.result;
      await expect(rt.approve(handle.runId, 'start', { by: 'eve' })).rejects.toMatchObject({ code: 'run.terminal' });
    } finally {
      await rt.close();
    }
  });
});

describe('cancellation', () => {
  it('reaches the tool through its AbortSignal, and a late completion is evidence only', async () => {
    let signal: AbortSignal | undefined;
    let finishLate: ((value: unknown) => void) | undefined;
    const rt = await openRuntime({
      tools: {
        slow: (_input: unknown, ctx: { signal: AbortSignal }) => {
          signal = ctx.signal;
          return new Promise((resolve) => (finishLate = resolve));
        },
      },
    });
    try {
      const t = chain('cancel-me', [{ id: 'slow', uses: 'tool.call@1', config: { tool: 'slow' } }]);
      t.spec.requires = ['tool:slow'];
      const handle = await rt.launch(t);
      while (!signal) await new Promise((r) => setTimeout(r, 5));
      const outcome = await rt.cancel(handle.runId, { reason: 'operator stop', by: 'carol' });
      expect(outcome.status).toBe('cancelled');
      expect(signal.aborted).toBe(true);
      finishLate!({ done: true });
      await new Promise((r) => setTimeout(r, 50));
      const types = (await rt.readEvents(handle.runId)).events.map((e) => e.type);
      expect(types).toContain('capability.cancelled');
      expect(types).toContain('run.cancelled');
      expect((await rt.getRun(handle.runId)).status).toBe('cancelled');
    } finally {
      await rt.close();
    }
  });

  it('records a completion delivered after cancellation without waking the run', async () => {
    const rt = await openRuntime({ tools: { wait: () => new Promise(() => undefined) } });
    try {
      const t = chain('late', [{ id: 'wait', uses: 'tool.call@1', config: { tool: 'wait' } }]);
      t.spec.requires = ['tool:wait'];
      const handle = await rt.launch(t);
      const requested = (await rt.readEvents(handle.runId)).events.find((e) => e.type === 'capability.requested');
      await rt.cancel(handle.runId);
      await rt.kernel.deliver(handle.runId, { type: 'capability-completed', invocationId: requested.payload.invocationId, ok: true, output: { late: true } });
      const events = (await rt.readEvents(handle.runId)).events;
      expect(events[events.length - 1]).toMatchObject({ type: 'capability.late', payload: { invocationId: requested.payload.invocationId, reason: 'run cancelled' } });
      expect(events.filter((e) => e.type === 'run.cancelled')).toHaveLength(1);
      expect((await rt.getRun(handle.runId)).status).toBe('cancelled');
    } finally {
      await rt.close();
    }
  });
});

describe('time limits and retries', () => {
  it('fails a node that passes its time limit and aborts its call', async () => {
    let signal: AbortSignal | undefined;
    const rt = await openRuntime({
      tools: {
        hang: (_: unknown, ctx: { signal: AbortSignal }) => {
          signal = ctx.signal;
          return new Promise(() => undefined);
        },
      },
    });
    try {
      // Idempotent: a time limit of a call with an unknown effect makes the node need attention
      // instead (test/host-node/unknown-outcomes.test.ts).
      const t = chain('timeout', [{ id: 'hang', uses: 'tool.call@1', config: { tool: 'hang', idempotent: true }, timeoutMs: 30 }]);
      t.spec.requires = ['tool:hang'];
      const outcome = await (await rt.launch(t)).result;
      expect(outcome.status).toBe('failed');
      expect((outcome.error?.detail as any).error.code).toBe('node.timeout');
      expect(signal?.aborted).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it('fails a run that passes its own time limit', async () => {
    const rt = await openRuntime({ tools: { hang: () => new Promise(() => undefined) } });
    try {
      const t = chain('run-timeout', [{ id: 'hang', uses: 'tool.call@1', config: { tool: 'hang' } }], { policies: { timeoutMs: 30 } });
      t.spec.requires = ['tool:hang'];
      const outcome = await (await rt.launch(t)).result;
      expect(outcome).toMatchObject({ status: 'failed', error: { code: 'run.timeout' } });
    } finally {
      await rt.close();
    }
  });

  it('retries only the error codes the policy names, with backoff', async () => {
    const seen: number[] = [];
    const rt = await openRuntime({
      tools: {
        shaky: (_: unknown, ctx: { attempt: number }) => {
          seen.push(ctx.attempt);
          // The tool's own typed errors: a call with an unknown effect is retried only on `retryable: true`.
          throw Object.assign(new Error(ctx.attempt === 1 ? 'rate limited' : 'bad request'), { code: ctx.attempt === 1 ? 'http.429' : 'http.400', retryable: true });
        },
      },
    });
    try {
      const t = chain('retry', [{ id: 'shaky', uses: 'tool.call@1', config: { tool: 'shaky' }, retry: { maxAttempts: 5, backoffMs: 10, retryOn: ['http.429'] } }]);
      t.spec.requires = ['tool:shaky'];
      const outcome = await (await rt.launch(t)).result;
      expect(seen).toEqual([1, 2]);
      expect((outcome.error?.detail as any).error.code).toBe('http.400');
    } finally {
      await rt.close();
    }
  });
});

describe('authority', () => {
  it('is consulted at launch and again on resume; a capability outside it is denied', async () => {
    const asked: string[] = [];
    const rt = await openRuntime({
      tools: { search: () => ({ hits: 1 }) },
      authorities: ({ runId }: { runId: string }) => {
        asked.push(runId);
        return { id: 'readers', scopes: ['tool:lookup'] };
      },
    });
    try {
      const t = chain('denied', [{ id: 'search', uses: 'tool.call@1', config: { tool: 'search' } }]);
      t.spec.requires = ['tool:search'];
      const handle = await rt.launch(t);
      const outcome = await handle.result;
      expect((outcome.error?.detail as any).error).toMatchObject({ code: 'capability.denied', message: expect.stringContaining('authority readers does not grant tool:search') });
      expect(asked).toEqual([handle.runId]);
    } finally {
      await rt.close();
    }
  });
});

describe('restart', () => {
  it('resumes a paused run in a new runtime from its checkpoint', async () => {
    const dir = tempDir();
    const template = chain('restart', [{ id: 'gate', uses: 'human.approval@1' }, { id: 'sum', uses: 'core.script@1', config: { source: 'return 1 + 1' } }]);
    template.spec.requires = ['approval'];
    template.spec.outputs = { sum: { source: 'output', nodeId: 'sum' } };
    const first = await WorkflowRuntime.open({ dir, log: () => undefined });
    const handle = await first.launch(template);
    expect((await handle.settled()).status).toBe('paused');
    await first.close();

    const consulted: string[] = [];
    const second = await WorkflowRuntime.open({
      dir,
      log: () => undefined,
      authorities: ({ runId }: { runId: string }) => (consulted.push(runId), { id: 'ops', scopes: ['approval'] }),
    });
    try {
      const resumed = await second.resume(handle.runId, { by: 'dave' });
      // The authority is resolved again on resume and recorded with it.
      expect(consulted).toEqual([handle.runId]);
      expect(await second.getRun(handle.runId)).toMatchObject({ status: 'paused', pausedReason: 'approval' });
      await second.approve(handle.runId, 'gate', { by: 'dave' });
      const resumedEvent = (await second.readEvents(handle.runId)).events.find((e) => e.type === 'run.resumed' && e.payload.by === 'dave');
      expect(resumedEvent.payload.authority).toEqual({ id: 'ops', scopes: ['approval'] });
      expect(await resumed.result).toMatchObject({ status: 'completed', output: { sum: 2 } });
      expect((await second.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await second.close();
    }
  });
});

describe('live replay', () => {
  it('runs the pinned plan again, linked to the source run, and reports what changed', async () => {
    let price = 10;
    const rt = await openRuntime({ tools: { quote: () => ({ price }) } });
    try {
      const t = chain('live', [{ id: 'quote', uses: 'tool.call@1', config: { tool: 'quote' } }, { id: 'double', uses: 'core.script@1', config: { source: 'return input.p * 2' }, inputs: { p: { source: 'output', nodeId: 'quote', path: '/price' } } }]);
      t.spec.requires = ['tool:quote'];
      const source = await rt.launch(t);
      await source.result;
      const same = await rt.replayLive(source.runId);
      expect(same).toMatchObject({ mode: 'live', sourceRunId: source.runId, identical: true, differences: [] });
      expect(same.runId).not.toBe(source.runId);
      const accepted = (await rt.readEvents(same.runId as string)).events[0];
      expect(accepted.correlation).toEqual({ liveReplayOf: source.runId, by: 'sdk' });
      expect(accepted.origin).toMatchObject({ actor: 'operator' });
      expect((await rt.readEvents(source.runId)).events[0].origin).toMatchObject({ actor: 'sdk' });
      price = 11;
      const changed = await rt.replayLive(source.runId);
      expect(changed.identical).toBe(false);
      expect((changed.differences as { nodeId: string }[]).map((d) => d.nodeId)).toEqual(['quote', 'double']);
    } finally {
      await rt.close();
    }
  });
});

describe('unknown outcomes after a restart', () => {
  it('surfaces non-idempotent foreach items as needs_attention and lets an operator settle each item', async () => {
    const dir = tempDir();
    const t = chain('unknown-items', [
      {
        id: 'send',
        uses: 'core.foreach@1',
        config: { maxConcurrency: 3, failurePolicy: 'continue', body: { uses: 'tool.call@1', config: { tool: 'send' } } },
        inputs: { items: { source: 'input', path: '/to' } },
      },
    ]);
    t.spec.requires = ['tool:send'];
    t.spec.outputs = { sent: { source: 'output', nodeId: 'send' } };
    const first = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { send: () => new Promise(() => undefined) } });
    const handle = await first.launch(t, { input: { to: ['a', 'b', 'c'] } });
    while ((await first.readEvents(handle.runId)).events.filter((e) => e.type === 'capability.requested').length < 3) await new Promise((r) => setTimeout(r, 5));
    await first.close();

    const sent: string[] = [];
    const second = await WorkflowRuntime.open({ dir, log: () => undefined, tools: { send: (to: string) => (sent.push(to), { to }) } });
    try {
      await (await second.resume(handle.runId, { by: 'ops' })).settled();
      expect(await second.getRun(handle.runId)).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });
      const events = (await second.readEvents(handle.runId)).events;
      expect(events.filter((e) => e.type === 'capability.abandoned')).toHaveLength(3);
      expect(sent).toEqual([]);
      await expect(second.resolve(handle.runId, 'send', { by: 'ops', succeeded: { to: 'a' } })).rejects.toMatchObject({ code: 'resolve.item-required' });
      await second.resolve(handle.runId, 'send', { by: 'ops', item: 0, succeeded: { to: 'a', checked: 'by hand' } });
      await second.resolve(handle.runId, 'send', { by: 'ops', item: 1, fail: 'bounced' });
      expect((await second.getRun(handle.runId)).status).toBe('paused');
      await second.resolve(handle.runId, 'send', { by: 'ops', item: 2, retry: true });
      const outcome = await (await second.resume(handle.runId, { by: 'ops' })).result;
      expect(sent).toEqual(['c']);
      expect(outcome.status).toBe('completed');
      expect((outcome.output as any).sent.results).toEqual([{ to: 'a', checked: 'by hand' }, null, { to: 'c' }]);
      expect((outcome.output as any).sent.failures).toEqual([{ index: 1, error: expect.objectContaining({ code: 'node.resolved-failed' }) }]);
      const resolved = (await second.readEvents(handle.runId, { limit: 1000 })).events.filter((e) => e.type === 'node.resolved');
      expect(resolved.map((e) => [e.payload.item, e.payload.resolution, e.payload.by])).toEqual([
        [0, 'succeeded', 'ops'],
        [1, 'fail', 'ops'],
        [2, 'retry', 'ops'],
      ]);
      expect((await second.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await second.close();
    }
  });
});

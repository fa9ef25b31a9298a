// A call whose effect class is `unknown` (neither read-only nor idempotent) is never repeated on a
// guess: a time limit says nothing about whether its effect happened, and neither does an error
// without the tool's own `retryable: true`. The tool's log file, outside the store, is the oracle.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';

function sideEffects(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function chargeTemplate(node: Record<string, unknown> = {}) {
  const t = chain('charge', [{ id: 'charge', uses: 'tool.call@1', config: { tool: 'charge' }, timeoutMs: 200, retry: { maxAttempts: 3, backoffMs: 0 }, ...node }]);
  t.spec.requires = ['tool:charge'];
  t.spec.outputs = { receipt: { source: 'output', nodeId: 'charge' } };
  return t;
}

describe('time limits of calls with an unknown effect', () => {
  it('a timed-out charge runs once: the node needs attention, the run pauses, and the operator retries it', async () => {
    const log = join(tempDir(), 'charges.log');
    const rt = await openRuntime({
      tools: {
        charge: (input: unknown, ctx: { attempt: number; invocationId: string }) => {
          appendFileSync(log, `${ctx.invocationId} attempt ${ctx.attempt}\n`);
          if (ctx.attempt === 1) return new Promise(() => undefined);
          return { charged: true, attempt: ctx.attempt };
        },
      },
    });
    try {
      const handle = await rt.launch(chargeTemplate());
      const paused = await handle.settled();
      expect(paused).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });
      await pause(400);
      expect(sideEffects(log)).toHaveLength(1);
      const events = (await rt.readEvents(handle.runId)).events;
      const types = events.map((e) => e.type);
      expect(types).not.toContain('node.retry-scheduled');
      expect(types).not.toContain('node.failed');
      const requested = events.find((e) => e.type === 'capability.requested');
      expect(events.find((e) => e.type === 'capability.abandoned')).toMatchObject({ payload: { invocationId: requested.payload.invocationId } });
      expect(events.find((e) => e.type === 'node.needs-attention')).toMatchObject({
        node: { id: 'charge' },
        payload: { invocationId: requested.payload.invocationId, evidence: { kind: 'tool', name: 'charge', effect: 'unknown', reason: 'timeout' } },
      });
      expect(await rt.getRun(handle.runId)).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });

      await rt.resolve(handle.runId, 'charge', { by: 'ops', retry: true });
      const outcome = await handle.result;
      expect(outcome).toMatchObject({ status: 'completed', output: { receipt: { charged: true, attempt: 2 } } });
      expect(sideEffects(log)).toHaveLength(2);
      expect((await rt.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it('an operator can settle a timed-out charge as succeeded without running it again', async () => {
    const log = join(tempDir(), 'charges.log');
    let signal: AbortSignal | undefined;
    const rt = await openRuntime({
      tools: {
        charge: (_input: unknown, ctx: { attempt: number; signal: AbortSignal }) => {
          appendFileSync(log, `attempt ${ctx.attempt}\n`);
          signal = ctx.signal;
          return new Promise(() => undefined);
        },
      },
    });
    try {
      const handle = await rt.launch(chargeTemplate());
      expect(await handle.settled()).toMatchObject({ status: 'paused', pausedReason: 'needs_attention' });
      // The abandoned call is aborted; whatever it returns later is evidence only.
      expect(signal?.aborted).toBe(true);
      await rt.resolve(handle.runId, 'charge', { by: 'ops', succeeded: { charged: true, checked: 'in the ledger' } });
      expect(await handle.result).toMatchObject({ status: 'completed', output: { receipt: { charged: true, checked: 'in the ledger' } } });
      expect(sideEffects(log)).toEqual(['attempt 1']);
      expect((await rt.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it('a timed-out read-only call is still retried', async () => {
    const log = join(tempDir(), 'lookups.log');
    const rt = await openRuntime({
      tools: {
        charge: (_input: unknown, ctx: { attempt: number }) => {
          appendFileSync(log, `attempt ${ctx.attempt}\n`);
          return ctx.attempt === 1 ? new Promise(() => undefined) : { balance: 5 };
        },
      },
    });
    try {
      const outcome = await (await rt.launch(chargeTemplate({ readOnly: true }))).result;
      expect(outcome).toMatchObject({ status: 'completed', output: { receipt: { balance: 5 } } });
      expect(sideEffects(log)).toEqual(['attempt 1', 'attempt 2']);
    } finally {
      await rt.close();
    }
  });
});

describe('errors of calls with an unknown effect', () => {
  it('an error without retryable: true is not retried', async () => {
    const log = join(tempDir(), 'charges.log');
    const rt = await openRuntime({
      tools: {
        charge: (_input: unknown, ctx: { attempt: number }) => {
          appendFileSync(log, `attempt ${ctx.attempt}\n`);
          throw Object.assign(new Error('gateway timeout from the bank'), { code: 'bank.504' });
        },
      },
    });
    try {
      const handle = await rt.launch(chargeTemplate({ timeoutMs: undefined }));
      const outcome = await handle.result;
      expect(outcome.status).toBe('failed');
      expect((outcome.error?.detail as any).error).toMatchObject({ code: 'bank.504' });
      expect(sideEffects(log)).toEqual(['attempt 1']);
      expect((await rt.readEvents(handle.runId)).events.map((e) => e.type)).not.toContain('node.retry-scheduled');
    } finally {
      await rt.close();
    }
  });

  it('the tool’s own typed error with retryable: true is retried', async () => {
    const log = join(tempDir(), 'charges.log');
    const rt = await openRuntime({
      tools: {
        charge: (_input: unknown, ctx: { attempt: number }) => {
          appendFileSync(log, `attempt ${ctx.attempt}\n`);
          if (ctx.attempt === 1) throw Object.assign(new Error('card network busy, nothing charged'), { code: 'bank.busy', retryable: true });
          return { charged: true };
        },
      },
    });
    try {
      const outcome = await (await rt.launch(chargeTemplate({ timeoutMs: undefined }))).result;
      expect(outcome).toMatchObject({ status: 'completed', output: { receipt: { charged: true } } });
      expect(sideEffects(log)).toEqual(['attempt 1', 'attempt 2']);
    } finally {
      await rt.close();
    }
  });

  it('a foreach item of an unknown-effect body is not retried on an untyped error', async () => {
    const log = join(tempDir(), 'sends.log');
    const rt = await openRuntime({
      tools: {
        send: (to: string, ctx: { attempt: number }) => {
          appendFileSync(log, `${to} attempt ${ctx.attempt}\n`);
          if (to === 'b') throw new Error('connection reset');
          return { to };
        },
      },
    });
    try {
      const t = chain('send-all', [
        {
          id: 'send',
          uses: 'core.foreach@1',
          config: { maxConcurrency: 1, failurePolicy: 'continue', body: { uses: 'tool.call@1', config: { tool: 'send' } } },
          inputs: { items: { source: 'input', path: '/to' } },
          retry: { maxAttempts: 3 },
        },
      ]);
      t.spec.requires = ['tool:send'];
      t.spec.outputs = { sent: { source: 'output', nodeId: 'send' } };
      const outcome = await (await rt.launch(t, { input: { to: ['a', 'b'] } })).result;
      expect(outcome.status).toBe('completed');
      expect(sideEffects(log)).toEqual(['a attempt 1', 'b attempt 1']);
      expect((outcome.output as any).sent.failures).toEqual([{ index: 1, error: expect.objectContaining({ message: 'connection reset' }) }]);
    } finally {
      await rt.close();
    }
  });
});

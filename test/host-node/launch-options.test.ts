// Options a host would otherwise accept and ignore: recorded with the run, or refused typed.
import { describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';

describe('launch options', () => {
  it('records origin and the delivery target in the correlation of run.accepted, also for background launches', async () => {
    const rt = await openRuntime();
    try {
      const t = chain('origin', []);
      const handle = await rt.launch(t, { origin: { channel: 'slack', message: 'm-42' }, delivery: { kind: 'webhook', url: 'https://hooks.example.com/hook', secretRef: 'HOOK_SECRET' }, correlation: { ticket: 'T-1' } });
      expect((await handle.result).status).toBe('completed');
      const accepted = (await rt.readEvents(handle.runId)).events[0];
      expect(accepted.type).toBe('run.accepted');
      expect(accepted.correlation).toEqual({ ticket: 'T-1', origin: { channel: 'slack', message: 'm-42' }, delivery: { kind: 'webhook', url: 'https://hooks.example.com/hook', secretRef: 'HOOK_SECRET' } });
      const queued = await rt.launch(t, { executionMode: 'background', delivery: { kind: 'dingtalk', webhookUrl: 'https://hooks.example.com/robot/send', accessTokenRef: 'ROBOT_TOKEN' } });
      const worker = await rt.startWorker({ deliveries: false });
      try {
        expect((await queued.result).status).toBe('completed');
      } finally {
        await worker.stop();
      }
      expect((await rt.readEvents(queued.runId)).events[0].correlation).toEqual({ delivery: { kind: 'dingtalk', webhookUrl: 'https://hooks.example.com/robot/send', accessTokenRef: 'ROBOT_TOKEN' } });
      // Both targets are kept with their runs: each run's end queued one delivery.
      expect((await rt.deliveries.list()).map((d) => [d.runId, d.phase, d.state]).sort()).toEqual([[handle.runId, 'ended', 'pending'], [queued.runId, 'ended', 'pending']].sort());
    } finally {
      await rt.close();
    }
  });

  it('refuses options it would ignore, and a correlation that cannot hold origin', async () => {
    const rt = await openRuntime();
    try {
      const t = chain('refused', []);
      await expect(rt.launch(t, { notifyUrl: 'https://x' } as never)).rejects.toMatchObject({ code: 'launch.option-unsupported' });
      await expect(rt.launch(t, { origin: 'cli', correlation: 'a string' })).rejects.toMatchObject({ code: 'launch.bad-correlation' });
      for (const delivery of [
        '',
        { kind: 'email', to: 'ops@example.com' },
        { kind: 'webhook', url: 'ftp://example.com/x' },
        { kind: 'webhook', url: 'http://user:pw@example.com/x' },
        { kind: 'webhook', url: 'http://example.com/x', secret: 'inline' },
        { kind: 'webhook', url: 'http://example.com/x', secretRef: 'not a name' },
        { kind: 'dingtalk', webhookUrl: 'not a url' },
        { kind: 'dingtalk', webhookUrl: 'http://example.com/robot', format: 'html' },
        { kind: 'dingtalk', webhookUrl: 'https://oapi.dingtalk.com/robot/send?access_token=secret-token' },
        { kind: 'dingtalk', webhookUrl: 'https://oapi.dingtalk.com/robot/send', accessTokenRef: 'not a name' },
      ]) {
        await expect(rt.launch(t, { delivery } as never), JSON.stringify(delivery)).rejects.toMatchObject({ code: 'launch.bad-delivery' });
      }
      expect(await rt.listRuns()).toEqual([]);
    } finally {
      await rt.close();
    }
  });

  it('refuses an option of the wrong type or out of range with its own code, before anything is written', async () => {
    const rt = await openRuntime();
    try {
      const t = chain('typed', []);
      const throwing = {
        toJSON() {
          throw new Error('not serialisable');
        },
      };
      const cases: [string, unknown[], string][] = [
        ['runId', [7, {}, null, 10n], 'launch.bad-run-id'],
        ['authority', ['admin', { id: 'a' }, { id: 'a', scopes: 'tool:*' }, { id: 1, scopes: [] }, { id: 'a', scopes: [7] }, null], 'launch.bad-authority'],
        ['timeoutMs', ['60000', '', [], {}, 0, -1, 1.5, NaN, Infinity, 31 * 86_400_000 + 1, true], 'launch.bad-timeout'],
        ['executionMode', ['backgroud', '', 1, null], 'launch.bad-execution-mode'],
        ['idempotencyKey', ['', 7, {}, null], 'launch.bad-idempotency-key'],
        ['concurrencyKey', ['', 7, {}, []], 'launch.bad-concurrency'],
        ['concurrencyLimit', [0, -1, 1.5, '2', null], 'launch.bad-concurrency'],
        ['actor', ['', 'Robert Tables', 7, {}, 'x'.repeat(40)], 'launch.bad-actor'],
        ['correlation', [() => 1, 10n, throwing, NaN, { deep: { fn: () => 1 } }], 'launch.bad-correlation'],
        ['origin', [() => 1, 10n, throwing], 'launch.bad-correlation'],
      ];
      for (const [option, values, code] of cases) {
        for (const value of values) {
          const options = { [option]: value, ...(option === 'concurrencyLimit' ? { concurrencyKey: 'k' } : {}) };
          await expect(rt.launch(t, options as never), `${option}: ${typeof value === 'bigint' ? 'bigint' : String(value)}`).rejects.toMatchObject({ code });
        }
      }
      expect(await rt.listRuns()).toEqual([]);
      // The values the types allow still run.
      const handle = await rt.launch(t, { runId: 'run-typed-ok', authority: { id: 'ops', scopes: ['*'] }, timeoutMs: 60_000, executionMode: 'inline', idempotencyKey: 'k-1', actor: 'cli', correlation: { ticket: 'T-2' } });
      expect((await handle.result).status).toBe('completed');
      const accepted = (await rt.readEvents(handle.runId)).events[0];
      expect(accepted).toMatchObject({ origin: { actor: 'cli' }, correlation: { ticket: 'T-2' }, payload: { authority: { id: 'ops', scopes: ['*'] } } });
      expect(accepted.payload.deadlineAt).toBe(Date.parse(accepted.occurredAt) + 60_000);
    } finally {
      await rt.close();
    }
  });
});

describe('capture options', () => {
  it('refuses what it does not carry out (policy.unsupported) instead of ignoring it', async () => {
    for (const capture of [{ mode: 'standard', keepForever: true }, { retentionDays: 'a month' }]) {
      await expect(WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, capture: capture as never })).rejects.toMatchObject({ code: 'policy.unsupported' });
    }
    await expect(WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, capture: { mode: 'everything' } as never })).rejects.toMatchObject({ code: 'policy.unsupported' });
  });

  it('refuses them in a template policy too', async () => {
    const rt = await openRuntime();
    try {
      const t = chain('policy', []);
      t.spec.policies = { capture: { mode: 'metadata', retentionDays: 7 } };
      expect(await rt.validate(t)).toMatchObject({ ok: false, errors: [{ code: 'template.schema', pointer: '/spec/policies/capture' }] });
    } finally {
      await rt.close();
    }
  });
});

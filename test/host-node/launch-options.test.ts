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

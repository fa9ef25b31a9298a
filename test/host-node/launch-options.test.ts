// Options a host would otherwise accept and ignore: recorded with the run, or refused typed.
import { describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';

describe('launch options', () => {
  it('records origin and deliveryRef in the correlation of run.accepted, also for background launches', async () => {
    const rt = await openRuntime();
    try {
      const t = chain('origin', []);
      const handle = await rt.launch(t, { origin: { channel: 'slack', message: 'm-42' }, deliveryRef: 'slack:C123/thread-9', correlation: { ticket: 'T-1' } });
      expect((await handle.result).status).toBe('completed');
      const accepted = (await rt.readEvents(handle.runId)).events[0];
      expect(accepted.type).toBe('run.accepted');
      expect(accepted.correlation).toEqual({ ticket: 'T-1', origin: { channel: 'slack', message: 'm-42' }, deliveryRef: 'slack:C123/thread-9' });
      const queued = await rt.launch(t, { executionMode: 'background', deliveryRef: 'mail:ops@example.com' });
      const worker = await rt.startWorker();
      try {
        expect((await queued.result).status).toBe('completed');
      } finally {
        await worker.stop();
      }
      expect((await rt.readEvents(queued.runId)).events[0].correlation).toEqual({ deliveryRef: 'mail:ops@example.com' });
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
      await expect(rt.launch(t, { deliveryRef: '' })).rejects.toMatchObject({ code: 'launch.bad-delivery-ref' });
      expect(await rt.listRuns()).toEqual([]);
    } finally {
      await rt.close();
    }
  });
});

describe('capture options', () => {
  it('refuses retentionDays and encryptArtifacts (policy.unsupported) instead of ignoring them', async () => {
    for (const capture of [{ mode: 'standard', retentionDays: 30 }, { encryptArtifacts: true }]) {
      await expect(WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, capture: capture as never })).rejects.toMatchObject({ code: 'policy.unsupported', message: expect.stringContaining('not supported') });
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

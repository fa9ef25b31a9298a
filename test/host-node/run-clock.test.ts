// Time inside a run never goes backwards, whatever the host clock does: every host gets the
// engine's monotonic run clock, kept in the run state (and its checkpoint).
import { describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, tempDir } from '../helpers/node-host.js';

const hour = 3_600_000;

function gated() {
  const t = chain('clock', [{ id: 'gate', uses: 'human.approval@1' }, { id: 'after', uses: 'core.script@1', config: { source: 'return 1' } }]);
  t.spec.requires = ['approval'];
  return t;
}

async function times(rt: WorkflowRuntime, runId: string): Promise<number[]> {
  return (await rt.readEvents(runId)).events.map((e) => Date.parse(e.occurredAt));
}

function expectNonDecreasing(values: number[]): void {
  for (let i = 1; i < values.length; i++) expect(values[i], `event ${i + 1}`).toBeGreaterThanOrEqual(values[i - 1]);
}

describe('run clock', () => {
  it('commits no event before run.accepted when the host clock jumps back an hour', async () => {
    let clock = Date.parse('2026-03-01T12:00:00.000Z');
    const rt = await WorkflowRuntime.open({ dir: tempDir(), log: () => undefined, now: () => clock });
    try {
      const handle = await rt.launch(gated());
      expect((await handle.settled()).status).toBe('paused');
      clock -= hour;
      await rt.approve(handle.runId, 'gate', { by: 'alice' });
      expect((await handle.result).status).toBe('completed');
      const t = await times(rt, handle.runId);
      expect(t[0]).toBe(Date.parse('2026-03-01T12:00:00.000Z'));
      expectNonDecreasing(t);
      expect((await rt.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it('keeps the run clock across a restart (rebuilt from the checkpoint)', async () => {
    const dir = tempDir();
    let clock = Date.parse('2026-03-01T12:00:00.000Z');
    const first = await WorkflowRuntime.open({ dir, log: () => undefined, now: () => clock });
    const handle = await first.launch(gated());
    expect((await handle.settled()).status).toBe('paused');
    await first.close();

    clock -= hour;
    const second = await WorkflowRuntime.open({ dir, log: () => undefined, now: () => clock });
    try {
      await second.resume(handle.runId, { by: 'ops' });
      await second.approve(handle.runId, 'gate', { by: 'alice' });
      expect((await second.getRun(handle.runId)).status).toBe('completed');
      const t = await times(second, handle.runId);
      expectNonDecreasing(t);
      expect(Math.min(...t)).toBe(Date.parse('2026-03-01T12:00:00.000Z'));
      expect((await second.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await second.close();
    }
  });
});

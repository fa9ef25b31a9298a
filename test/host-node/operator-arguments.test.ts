// The runtime's operator and read calls given arguments of the wrong type (what a JavaScript
// caller or a JSON client can pass, whatever the TypeScript types say): each is refused with a
// typed error that names the argument, before it reaches the store or the run's inbox, and the
// run is left as it was.
import { describe, expect, it } from 'vitest';
import { api, openRuntime } from '../helpers/node-host.js';

const approvalTemplate = {
  apiVersion: api,
  kind: 'WorkflowTemplate',
  metadata: { id: 'args' },
  spec: {
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'ok', uses: 'human.approval@1', config: { prompt: 'go?' } },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [
      { from: 'start', to: 'ok' },
      { from: 'ok', to: 'end' },
    ],
    requires: ['approval'],
  },
};

const notText = [7, [], {}, true, null, () => 1, 10n];

describe('operator and read calls with arguments of the wrong type', () => {
  it('refuse them typed, naming the argument, and change nothing', async () => {
    const rt = await openRuntime();
    try {
      const handle = await rt.launch(approvalTemplate);
      await expect.poll(async () => (await rt.getRun(handle.runId)).status).toBe('paused');
      const runId = handle.runId;
      for (const v of notText) {
        const calls: [string, () => Promise<unknown>][] = [
          ['getRun', () => rt.getRun(v as never)],
          ['readEvents', () => rt.readEvents(v as never)],
          ['cancel', () => rt.cancel(v as never)],
          ['approve', () => rt.approve(v as never, 'ok', { by: 'me' })],
          ['checkRun', () => rt.checkRun(v as never)],
          ['planOfRun', () => rt.planOfRun(v as never)],
          ['replay', () => rt.replay(v as never)],
          ['exportRun', () => rt.exportRun(v as never)],
          ['follow', async () => rt.follow(v as never)],
        ];
        for (const [name, call] of calls) await expect(call(), `${name}(${typeof v})`).rejects.toMatchObject({ code: 'store.bad-id' });
      }
      const badArguments: [string, () => Promise<unknown>, string][] = [
        ['approve by', () => rt.approve(runId, 'ok', { by: {} as never }), 'command.by'],
        ['approve comment', () => rt.approve(runId, 'ok', { by: 'me', comment: 7 as never }), 'command.comment'],
        ['approve approved', () => rt.approve(runId, 'ok', { by: 'me', approved: 'yes' as never }), 'options.approved'],
        ['approve options', () => rt.approve(runId, 'ok', undefined as never), 'options'],
        ['approve wait', () => rt.approve(runId, 'ok', { by: 'me', timeoutMs: 'soon' as never }), 'options.timeoutMs'],
        ['cancel reason', () => rt.cancel(runId, { reason: { why: 1 } as never }), 'command.reason'],
        ['cancel by', () => rt.cancel(runId, { by: '' }), 'command.by'],
        ['resolve without resolution', () => rt.resolve(runId, 'ok', undefined as never), 'resolution'],
        ['resolve with a BigInt output', () => rt.resolve(runId, 'ok', { by: 'me', succeeded: { n: 10n } } as never), 'command.output.n'],
        ['command of no type', () => rt.command(runId, { by: 'me' } as never), 'command.type'],
        ['readEvents limit', () => rt.readEvents(runId, { limit: [] as never }), 'options.limit'],
        ['readEvents afterSeq', () => rt.readEvents(runId, { afterSeq: -1 }), 'options.afterSeq'],
        ['listRuns filter', () => rt.listRuns('paused' as never), 'filter'],
        ['listRuns limit', () => rt.listRuns({ limit: true as never }), 'filter.limit'],
        ['listRuns statuses', () => rt.listRuns({ statuses: 'paused' as never }), 'filter.statuses'],
        ['listRuns member', () => rt.listRuns({ state: 'paused' } as never), 'filter'],
        ['commandResult', () => rt.commandResult({} as never), 'commandId'],
      ];
      for (const [name, call, argument] of badArguments) await expect(call(), name).rejects.toMatchObject({ code: 'sdk.bad-argument', detail: { argument } });
      // Nothing reached the run: it still waits for its approval, which the right call gives.
      expect((await rt.getRun(runId)).status).toBe('paused');
      expect((await rt.readEvents(runId)).events.map((e) => e.type)).not.toContain('run.cancelled');
      await rt.approve(runId, 'ok', { by: 'me', comment: 'fine' });
      expect((await handle.result).status).toBe('completed');
      expect((await rt.listRuns({ statuses: ['completed'], limit: 5 })).map((r) => r.runId)).toEqual([runId]);
    } finally {
      await rt.close();
    }
  });
});

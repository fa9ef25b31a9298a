// What a run starts from and what its nodes read: inputSchema defaults, bindings to output paths
// that do not exist, and the outcome of a run whose approval was rejected.
import { describe, expect, it } from 'vitest';
import { chain, openRuntime } from '../helpers/node-host.js';

describe('run input', () => {
  it('applies inputSchema defaults before validation and records the defaulted input in run.accepted', async () => {
    const rt = await openRuntime();
    try {
      const t = chain('greet', [{ id: 'greet', uses: 'core.script@1', config: { source: "return input.greeting + ', ' + input.name + ' x' + input.times" }, inputs: { greeting: { source: 'input', path: '/greeting' }, name: { source: 'input', path: '/name' }, times: { source: 'input', path: '/options/times' } } }]);
      t.spec.inputSchema = {
        type: 'object',
        required: ['name', 'greeting'],
        properties: {
          name: { type: 'string' },
          greeting: { type: 'string', default: 'hello' },
          options: { type: 'object', default: {}, properties: { times: { type: 'integer', default: 2 } } },
        },
      };
      t.spec.outputs = { text: { source: 'output', nodeId: 'greet' } };
      const handle = await rt.launch(t, { input: { name: 'ada' } });
      const outcome = await handle.result;
      expect(outcome).toMatchObject({ status: 'completed', output: { text: 'hello, ada x2' } });
      const accepted = (await rt.readEvents(handle.runId)).events[0];
      expect(accepted).toMatchObject({ type: 'run.accepted', payload: { input: { name: 'ada', greeting: 'hello', options: { times: 2 } } } });
      expect((await rt.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
      // A given value is kept; validation still refuses a wrong one.
      const given = await (await rt.launch(t, { input: { name: 'bob', greeting: 'hi', options: { times: 1 } } })).result;
      expect(given.output).toEqual({ text: 'hi, bob x1' });
      await expect(rt.launch(t, { input: { greeting: 'hi' } })).rejects.toMatchObject({ code: 'run.input-invalid' });
    } finally {
      await rt.close();
    }
  });
});

describe('bindings', () => {
  it('fails the node with binding.missing, naming the path, when an upstream output has no such path', async () => {
    const rt = await openRuntime();
    try {
      const t = chain('missing-path', [
        { id: 'a', uses: 'core.script@1', config: { source: 'return { total: 3 }' } },
        { id: 'b', uses: 'core.script@1', config: { source: 'return input.value === undefined ? "vanished" : input.value' }, inputs: { value: { source: 'output', nodeId: 'a', path: '/missing' } } },
      ]);
      const handle = await rt.launch(t);
      const outcome = await handle.result;
      expect(outcome.status).toBe('failed');
      const error = (outcome.error?.detail as any).error;
      expect((outcome.error?.detail as any).nodeId).toBe('b');
      expect(error).toMatchObject({ code: 'binding.missing', message: expect.stringContaining('/missing'), detail: { input: 'value', nodeId: 'a', path: '/missing' } });
      expect((await rt.replay(handle.runId, { mode: 'recorded' })).identical).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it('still leaves out a binding to a node that was skipped (a join after a condition)', async () => {
    const rt = await openRuntime();
    try {
      const t = {
        apiVersion: 'workflow.gm-hz.dev/v1alpha1',
        kind: 'WorkflowTemplate',
        metadata: { id: 'join' },
        spec: {
          nodes: [
            { id: 'start', uses: 'core.start@1' },
            { id: 'check', uses: 'core.condition@1', config: { operator: 'truthy' }, inputs: { left: { source: 'input', path: '/flag' } } },
            { id: 'yes', uses: 'core.script@1', config: { source: 'return { said: "yes" }' } },
            { id: 'no', uses: 'core.script@1', config: { source: 'return { said: "no" }' } },
            { id: 'end', uses: 'core.end@1', inputs: { yes: { source: 'output', nodeId: 'yes', path: '/said' }, no: { source: 'output', nodeId: 'no', path: '/said' } } },
          ],
          edges: [
            { from: 'start', to: 'check' },
            { from: 'check', to: 'yes', port: 'true' },
            { from: 'check', to: 'no', port: 'false' },
            { from: 'yes', to: 'end' },
            { from: 'no', to: 'end' },
          ],
        },
      };
      const outcome = await (await rt.launch(t, { input: { flag: true } })).result;
      expect(outcome).toMatchObject({ status: 'completed', output: { yes: 'yes' } });
    } finally {
      await rt.close();
    }
  });
});

describe('a rejected approval', () => {
  it('fails the run without a paused reason in the engine’s outcome', async () => {
    const rt = await openRuntime();
    try {
      const template = chain('reject-me', [{ id: 'gate', uses: 'human.approval@1' }]);
      template.spec.requires = ['approval'];
      const handle = await rt.launch(template);
      expect(await handle.settled()).toMatchObject({ status: 'paused', pausedReason: 'approval' });
      await rt.reject(handle.runId, 'gate', { by: 'bob' });
      const outcome = await handle.result;
      expect(outcome.status).toBe('failed');
      expect(outcome.pausedReason).toBeUndefined();
      const inspected = await rt.replay(handle.runId, { mode: 'inspect' }) as any;
      expect(inspected.outcome.status).toBe('failed');
      expect(inspected.outcome.pausedReason).toBeUndefined();
    } finally {
      await rt.close();
    }
  });

  // The host reads the outcome projection the engine's summary leaves with each commit, so a
  // failed run never reports the pausedReason of an earlier pause.
  it('is reported without a paused reason by reject() and getRun()', async () => {
    const rt = await openRuntime();
    try {
      const template = chain('reject-me', [{ id: 'gate', uses: 'human.approval@1' }]);
      template.spec.requires = ['approval'];
      const handle = await rt.launch(template);
      await handle.settled();
      const rejected = await rt.reject(handle.runId, 'gate', { by: 'bob' });
      expect(rejected.status).toBe('failed');
      expect(rejected.pausedReason).toBeUndefined();
      expect((await rt.getRun(handle.runId)).pausedReason).toBeUndefined();
    } finally {
      await rt.close();
    }
  });
});

// Where a run came from, as its journal records it: the origin actor of each launch path, and
// the correlation every event carries (the launch's trace context, origin and delivery; for a
// child run its parent, the call that caused it and that call's trace context).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CronBindingScheduler, TriggerPipeline } from '../../dist/hosts/node/index.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';
import { receiver } from './otlp-receiver.js';

const caseDir = new URL('../cases/subworkflow/', import.meta.url);
const parentTemplate = JSON.parse(readFileSync(new URL('template.json', caseDir), 'utf8'));
const childDependencies = (await import(new URL('host.mjs', caseDir).href)).default.dependencies;

const trace = '0af7651916cd43dd8448eb211c80319c';
const traceparent = `00-${trace}-b7ad6b7169203331-01`;

describe('origin and correlation', () => {
  it('an SDK launch records its actor, correlation, origin and trace context on every event', async () => {
    const rt = await openRuntime();
    try {
      const handle = await rt.launch(chain('plain', []), { correlation: { ticket: 'T-1' }, origin: { channel: 'chat', user: 'u1' }, traceparent });
      expect((await handle.result).status).toBe('completed');
      const { events } = await rt.readEvents(handle.runId);
      expect(events[0].origin.actor).toBe('sdk');
      for (const e of events) expect(e.correlation).toEqual({ ticket: 'T-1', origin: { channel: 'chat', user: 'u1' }, traceparent });
    } finally {
      await rt.close();
    }
  });

  it('a child run records its parent, the call that caused it and that call in the parent trace; its spans hang under that call', async () => {
    const otlp = await receiver();
    const rt = await openRuntime({ telemetry: { otlpUrl: otlp.url } });
    let parentId: string;
    let parentEvents: any[];
    let childEvents: any[];
    try {
      const handle = await rt.launch({ type: 'inline', template: parentTemplate, dependencies: childDependencies }, { input: { n: 21 }, traceparent });
      expect(await handle.result).toMatchObject({ status: 'completed' });
      parentId = handle.runId;
      parentEvents = (await rt.readEvents(parentId)).events;
      const requested = parentEvents.find((e) => e.type === 'capability.requested');
      childEvents = (await rt.readEvents(requested.payload.invocationId)).events;
    } finally {
      await rt.close();
      await otlp.close();
    }
    const requested = parentEvents.find((e) => e.type === 'capability.requested');
    const call = otlp.spans.find((s) => s.attributes['workflow.invocation.id'] === requested.payload.invocationId)!;
    expect(call).toBeDefined();
    const accepted = childEvents[0];
    expect(accepted.type).toBe('run.accepted');
    expect(accepted.origin.actor).toBe('parent');
    expect(accepted.payload.parentRunId).toBe(parentId!);
    expect(accepted.correlation).toEqual({
      parentRunId: parentId!,
      causedBy: { runId: parentId!, nodeId: 'call', invocationId: requested.payload.invocationId },
      traceparent: `00-${trace}-${call.spanId}-01`,
    });
    // One trace: the child's run span is a child of the parent's call span.
    const childRun = otlp.spans.find((s) => s.name === 'run double')!;
    expect(childRun).toMatchObject({ traceId: trace, parentSpanId: call.spanId });
    expect(otlp.spans.every((s) => s.traceId === trace)).toBe(true);
  });

  it('a queued run started by a worker hands its calls the launch trace context without reading the journal for it', async () => {
    const dir = tempDir();
    const seen: string[] = [];
    const launcher = await openRuntime({ dir });
    const worker = await openRuntime({ dir, tools: { echo: (_i: unknown, ctx: { traceparent?: string }) => (seen.push(ctx.traceparent ?? 'none'), {}) } });
    const store = (worker as any).store;
    const readEvents = store.readEvents.bind(store);
    const reads: string[] = [];
    store.readEvents = (runId: string, afterSeq: number, limit: number) => (reads.push(runId), readEvents(runId, afterSeq, limit));
    try {
      const template = chain('queued-trace', [{ id: 'echo', uses: 'tool.call@1', config: { tool: 'echo' } }], { requires: ['tool:echo'] });
      const handle = await launcher.launch(template, { executionMode: 'background', traceparent });
      const serving = await worker.startWorker();
      expect((await worker.follow(handle.runId).result).status).toBe('completed');
      await serving.stop();
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatch(new RegExp(`^00-${trace}-[0-9a-f]{16}-01$`));
      expect(reads.filter((r) => r === handle.runId)).toEqual([]);
    } finally {
      await worker.close();
      await launcher.close();
    }
  });

  it('a cron binding records its binding and slot, a live replay the operator and its source run', async () => {
    const echo = JSON.parse(readFileSync(new URL('../../examples/echo/echo.json', import.meta.url), 'utf8'));
    const rt = await openRuntime({ tools: { echo: (i: { text: string }) => ({ text: i.text }) } });
    const cron = new CronBindingScheduler(rt, new TriggerPipeline(rt, { deployment: 'test' }), { log: () => undefined });
    try {
      await rt.catalog.putDraft(echo, { expectedDraftRevision: 0 });
      await rt.catalog.publish('echo', { expectedDraftRevision: 1 });
      const binding = await rt.bindings.put({ id: 'tick', source: 'cron', config: { pattern: '* * * * * *' }, target: 'echo@1', input: { text: { literal: 'tick' } } });
      await rt.bindings.publish('tick', binding.revision);
      await cron.start();
      let fired: { runId?: string; sourceEventId?: string } | undefined;
      while (!(fired = (await rt.triggerStorage.listIngress({ bindingId: 'tick', status: 'launched', limit: 1 }))[0])) await new Promise((r) => setTimeout(r, 50));
      await cron.stop();
      const runId = fired.runId!;
      const worker = await rt.startWorker();
      expect((await rt.follow(runId).result).status).toBe('completed');
      await worker.stop();
      const triggered = (await rt.readEvents(runId)).events[0];
      expect(triggered.origin.actor).toBe('trigger');
      expect(triggered.correlation).toEqual({ origin: { kind: 'trigger', source: 'cron', binding: 'tick@1', sourceEventId: fired.sourceEventId, caller: 'cron' } });

      const report = await rt.replayLive(runId);
      const replayed = (await rt.readEvents(report.runId as string)).events[0];
      expect(replayed.origin.actor).toBe('operator');
      expect(replayed.correlation).toEqual({ liveReplayOf: runId, by: 'sdk' });
    } finally {
      await cron.stop();
      await rt.close();
    }
  });
});

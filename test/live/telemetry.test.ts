// OpenTelemetry export against a real OTLP/HTTP receiver on loopback (a node:http server that
// decodes the exporter's JSON), and against a collector that is not there.
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowRuntime } from '../../dist/hosts/node/index.js';
import { chain, openRuntime, tempDir } from '../helpers/node-host.js';
import { gatedTemplate, jsonLines, liveWorld, runCli, writeTemplate } from './helpers.js';
import { receiver, type ReceivedSpan } from './otlp-receiver.js';

/** A loopback port nothing listens on (bound, then released). */
async function refusedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

const launchTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
const launchSpan = '00f067aa0ba902b7';
const traceparent = `00-${launchTrace}-${launchSpan}-01`;

function twoTools() {
  const t = chain('otel', [
    { id: 'fetch', uses: 'tool.call@1', config: { tool: 'fetch' } },
    { id: 'store', uses: 'tool.call@1', config: { tool: 'store' }, inputs: { v: { source: 'output', nodeId: 'fetch', path: '/v' } } },
  ]);
  t.spec.requires = ['tool:fetch', 'tool:store'];
  return t;
}

describe('OpenTelemetry export', () => {
  it('sends run, node and call spans of committed events, in the launch trace, and hands each call its traceparent', async () => {
    const otlp = await receiver();
    closers.push(otlp.close);
    const seen: Record<string, string | undefined> = {};
    const rt = await openRuntime({
      telemetry: { otlpUrl: otlp.url, serviceName: 'otel-test' },
      tools: {
        fetch: (_input: unknown, ctx: { traceparent?: string; invocationId: string }) => ((seen[ctx.invocationId] = ctx.traceparent), { v: 1 }),
        store: (_input: unknown, ctx: { traceparent?: string; invocationId: string }) => ((seen[ctx.invocationId] = ctx.traceparent), { ok: true }),
      },
    });
    let runId: string;
    let events: any[];
    try {
      const handle = await rt.launch(twoTools(), { traceparent });
      runId = handle.runId;
      expect((await handle.result).status).toBe('completed');
      events = (await rt.readEvents(runId)).events;
    } finally {
      await rt.close();
    }
    expect(rt.telemetryStats()).toMatchObject({ droppedSpans: 0, failedSpans: 0, queuedSpans: 0 });

    // The journal keeps the launch's trace context.
    expect(events[0]).toMatchObject({ type: 'run.accepted', correlation: { traceparent } });
    expect(otlp.requests.every((r) => r.startsWith('POST /v1/traces application/json'))).toBe(true);

    const spans = otlp.spans;
    expect(spans.every((s) => s.traceId === launchTrace && s.serviceName === 'otel-test')).toBe(true);
    const run = spans.filter((s) => s.name === 'run otel');
    expect(run).toHaveLength(1);
    expect(run[0]).toMatchObject({ parentSpanId: launchSpan, attributes: { 'workflow.run.id': runId!, 'workflow.run.status': 'completed', 'workflow.origin.actor': 'sdk' } });
    expect(run[0].status?.code).toBe(1);

    const nodes = spans.filter((s) => s.name.startsWith('node '));
    expect(nodes.map((s) => s.name).sort()).toEqual(['node end', 'node fetch', 'node start', 'node store']);
    expect(nodes.every((s) => s.parentSpanId === run[0].spanId)).toBe(true);

    const calls = spans.filter((s) => s.name.startsWith('tool '));
    expect(calls.map((s) => s.name).sort()).toEqual(['tool fetch', 'tool store']);
    for (const call of calls) {
      const node = nodes.find((n) => n.name === `node ${call.attributes['workflow.node.id']}`)!;
      expect(call.parentSpanId).toBe(node.spanId);
      expect(call.kind).toBe(3); // OTLP SPAN_KIND_CLIENT
      // The tool was handed the call's own span as its parent.
      expect(seen[call.attributes['workflow.invocation.id'] as string]).toBe(`00-${launchTrace}-${call.spanId}-01`);
      expect(BigInt(call.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(call.startTimeUnixNano));
    }
    expect(spans).toHaveLength(1 + 4 + 2);
    expect(new Set(spans.map((s) => s.spanId)).size).toBe(spans.length);
  });

  it('a process that takes the run over after a restart sends the same spans again, with the same ids', async () => {
    const otlp = await receiver();
    closers.push(otlp.close);
    const dir = tempDir();
    const t = chain('gated', [{ id: 'prep', uses: 'tool.call@1', config: { tool: 'prep' } }, { id: 'gate', uses: 'human.approval@1' }]);
    t.spec.requires = ['tool:prep', 'approval'];
    const first = await WorkflowRuntime.open({ dir, log: () => undefined, telemetry: { otlpUrl: `${otlp.url}/v1/traces` }, tools: { prep: () => ({ ready: true }) } });
    let runId: string;
    try {
      const handle = await first.launch(t);
      runId = handle.runId;
      expect((await handle.settled()).status).toBe('paused');
    } finally {
      await first.close();
    }
    const before = otlp.spans.splice(0);
    // The run is paused: its run span is open; start and prep (node and call) have ended.
    expect(before.map((s) => s.name).sort()).toEqual(['node prep', 'node start', 'tool prep']);

    const second = await WorkflowRuntime.open({ dir, log: () => undefined, telemetry: { otlpUrl: otlp.url }, tools: { prep: () => ({ ready: true }) } });
    try {
      const resumed = await second.resume(runId!, { by: 'alice' });
      await second.approve(runId!, 'gate', { by: 'alice' });
      expect((await resumed.result).status).toBe('completed');
    } finally {
      await second.close();
    }
    const after = otlp.spans;
    const key = (s: ReceivedSpan) => JSON.stringify([s.traceId, s.spanId, s.parentSpanId, s.name, s.startTimeUnixNano, s.endTimeUnixNano]);
    for (const span of before) expect(after.map(key)).toContain(key(span));
    expect(after.map((s) => s.name).sort()).toEqual(['approval gate', 'node end', 'node gate', 'node prep', 'node start', 'run gated', 'tool prep']);
    // Without a traceparent at launch, the trace id is derived from the run id: the same in both processes.
    expect(new Set(after.map((s) => s.traceId)).size).toBe(1);
  });

  it.each(['refuses connections', 'never answers'])('a collector that %s does not fail a run or hold its process, and the loss is counted', async (kind) => {
    let port: number;
    if (kind === 'refuses connections') port = await refusedPort();
    else {
      // Takes every request and never answers it.
      const silent = createServer(() => undefined);
      await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
      port = (silent.address() as AddressInfo).port;
      closers.push(() => new Promise((r) => (silent.closeAllConnections(), silent.close(() => r()))));
    }
    let calls = 0;
    const rt = await openRuntime({ telemetry: { otlpUrl: `http://127.0.0.1:${port}` }, tools: { fetch: () => (calls++, { v: 1 }), store: () => (calls++, { ok: true }) } });
    try {
      for (let i = 0; i < 3; i++) {
        const handle = await rt.launch(twoTools(), { traceparent });
        expect((await handle.result).status).toBe('completed');
      }
    } finally {
      await rt.close();
    }
    expect(calls).toBe(6);
    const stats = rt.telemetryStats()!;
    expect(stats.exportedSpans).toBe(0);
    // Each span was either sent in a request that failed or dropped at close: none is left behind.
    expect(stats.failedSpans + stats.droppedSpans).toBe(3 * 7);
    expect(stats.queuedSpans).toBe(0);
  });

  it('refuses a traceparent that is not W3C and an endpoint that is not a URL, with typed errors', async () => {
    const rt = await openRuntime({ tools: { fetch: () => ({ v: 1 }), store: () => ({ ok: true }) } });
    try {
      await expect(rt.launch(twoTools(), { traceparent: '00-zz-00f067aa0ba902b7-01' })).rejects.toMatchObject({ code: 'launch.bad-traceparent' });
      await expect(rt.launch(twoTools(), { traceparent: `00-${'0'.repeat(32)}-${launchSpan}-01` })).rejects.toMatchObject({ code: 'launch.bad-traceparent' });
      // Without telemetry, calls still get a trace context (the run's derived trace).
      const handle = await rt.launch(twoTools());
      expect((await handle.result).status).toBe('completed');
      expect(rt.telemetryStats()).toBeUndefined();
    } finally {
      await rt.close();
    }
    await expect(openRuntime({ telemetry: { otlpUrl: 'not a url' } })).rejects.toMatchObject({ code: 'telemetry.bad-url' });
  });

  it('the CLI exports with --otlp or OTEL_EXPORTER_OTLP_ENDPOINT and joins the trace of --traceparent', async () => {
    const otlp = await receiver();
    closers.push(otlp.close);
    const w = liveWorld();
    const gated = gatedTemplate('cli-gated');
    const launched = await runCli(w, ['run', writeTemplate(w, 'cli-gated', gated), '--otlp', otlp.url, '--traceparent', traceparent]);
    expect(launched.code).toBe(4);
    const runId = jsonLines(launched.stdout).at(-1).runId as string;
    expect(otlp.spans.map((s) => s.name).sort()).toEqual(['node start']);

    const approved = await runCli(w, ['approve', runId, 'gate', '--by', 'alice'], { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url });
    expect(approved.code).toBe(0);
    // The approving process read the run from seq 0: `node start` comes again, the same span.
    expect(otlp.spans.map((s) => s.name).sort()).toEqual(['approval gate', 'node after', 'node end', 'node gate', 'node start', 'node start', 'run cli-gated', 'tool echo']);
    const starts = otlp.spans.filter((s) => s.name === 'node start');
    expect(starts[1]).toEqual(starts[0]);
    expect(otlp.spans.every((s) => s.traceId === launchTrace)).toBe(true);
    expect(otlp.spans.find((s) => s.name === 'run cli-gated')).toMatchObject({ parentSpanId: launchSpan, attributes: { 'workflow.origin.actor': 'cli', 'workflow.run.status': 'completed' } });

    const bad = await runCli(w, ['run', writeTemplate(w, 'cli-gated', gated), '--traceparent', 'nope']);
    expect(bad.stderr).toContain('launch.bad-traceparent');
    expect(bad.code).not.toBe(0);
  });

  it('a process that does not export never loads the OpenTelemetry packages', async () => {
    const script = new URL('./fixtures/otel-imports.mjs', import.meta.url).pathname;
    const run = promisify(execFile);
    const without = await run(process.execPath, [script]);
    expect(without.stdout).toBe('closed\n');
    expect(without.stderr).not.toContain('@opentelemetry/');
    // The same script with telemetry does load them (the check above can see them).
    const port = await refusedPort();
    const withTelemetry = await run(process.execPath, [script, `http://127.0.0.1:${port}`]);
    expect(withTelemetry.stdout).toBe('closed\n');
    expect(withTelemetry.stderr).toContain('resolved @opentelemetry/exporter-trace-otlp-http');
  });
});

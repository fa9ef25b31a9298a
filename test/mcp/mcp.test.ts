// The MCP server, spoken to by the MCP SDK's own client over stdio, in a child process.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ProgressNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/node-host.js';

const cli = new URL('../../dist/hosts/node/cli/main.js', import.meta.url).pathname;
const example = (p: string) => new URL(`../../examples/${p}`, import.meta.url).pathname;

let client: Client;

beforeAll(async () => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp', '--profile', 'invoke,author,operator', '--dir', tempDir('adw-mcp-'), '--config', example('echo/agent-workflow.config.mjs')],
    stderr: 'ignore',
  });
  client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(transport);
});

afterAll(async () => {
  await client?.close();
});

const call = async (name: string, args: Record<string, unknown>) => {
  const result = (await client.callTool({ name, arguments: args })) as { structuredContent?: any; isError?: boolean };
  return { value: result.structuredContent, isError: result.isError === true };
};

describe('MCP server', () => {
  it('lists its tools', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'cancel_run', 'decide_approval', 'describe_workflow', 'diff_revisions', 'get_draft', 'get_run', 'list_runs', 'publish_workflow',
      'put_draft', 'read_events', 'replay_run', 'resolve_node', 'run_workflow', 'search_workflows', 'validate_template',
    ]);
  });

  it('validates, runs, inspects and replays a workflow', async () => {
    const template = JSON.parse(readFileSync(example('echo/echo.json'), 'utf8'));
    const invalid = await call('validate_template', { template: { ...template, spec: { ...template.spec, requires: [] } } });
    expect(invalid.value).toMatchObject({ ok: false, errors: [expect.objectContaining({ code: 'requires.missing', pointer: '/spec/nodes/1/uses' })] });

    const run = await call('run_workflow', { template, input: { text: 'from an agent' } });
    expect(run.isError).toBe(false);
    expect(run.value).toMatchObject({ status: 'completed', output: { echoed: 'from an agent' } });

    const events = await call('read_events', { runId: run.value.runId, limit: 3 });
    expect(events.value.events.map((e: { type: string }) => e.type)).toEqual(['run.accepted', 'run.started', 'node.started']);
    expect(events.value.events[0].origin.actor).toBe('mcp');
    expect(events.value.more).toBe(true);
    expect((await call('get_run', { runId: run.value.runId })).value).toMatchObject({ status: 'completed', lastSeq: run.value.seq });
    expect((await call('replay_run', { runId: run.value.runId, mode: 'recorded' })).value).toMatchObject({ identical: true });
    expect((await call('list_runs', {})).value.runs).toHaveLength(1);
  });

  it('launches a run with a delivery target, kept in its correlation', async () => {
    const template = JSON.parse(readFileSync(example('echo/echo.json'), 'utf8'));
    const delivery = { kind: 'webhook', url: 'https://hooks.example.com/hook', secretRef: 'HOOK_SECRET' };
    const run = await call('run_workflow', { template, input: { text: 'delivered' }, delivery });
    expect(run.value).toMatchObject({ status: 'completed' });
    const events = await call('read_events', { runId: run.value.runId, limit: 1 });
    expect(events.value.events[0].correlation).toEqual({ delivery });
  });

  it('sends a progress notification for each committed event of a run it started with a progress token', async () => {
    const template = JSON.parse(readFileSync(example('echo/echo.json'), 'utf8'));
    // Caught by a handler of the test's own: the SDK client's per-request progress callback is
    // dropped as soon as the response is read, with notifications read in the same chunk unseen.
    const notes: { progressToken: string | number; progress: number; message?: string }[] = [];
    client.setNotificationHandler(ProgressNotificationSchema, (n) => {
      notes.push(n.params);
    });
    const result = (await client.callTool({ name: 'run_workflow', arguments: { template, input: { text: 'watched' } }, _meta: { progressToken: 'watch-1' } })) as { structuredContent?: any };
    await new Promise((r) => setImmediate(r));
    expect(result.structuredContent).toMatchObject({ status: 'completed' });
    const seq = result.structuredContent.seq as number;
    expect(notes.map((n) => n.progress)).toEqual(Array.from({ length: seq }, (_, i) => i + 1));
    expect(notes.every((n) => n.progressToken === 'watch-1')).toBe(true);
    expect(notes[0].message).toBe('run.accepted');
    expect(notes.some((n) => n.message === 'run.completed')).toBe(true);
  });

  it('answers bad requests with a typed error and keeps serving', async () => {
    const missing = await call('get_run', { runId: 'run-does-not-exist' });
    expect(missing).toMatchObject({ isError: true, value: { error: { code: 'run.not-found' } } });
    const badInput = await call('run_workflow', { template: JSON.parse(readFileSync(example('echo/echo.json'), 'utf8')), input: {} });
    expect(badInput).toMatchObject({ isError: true, value: { error: { code: 'run.input-invalid' } } });
    const badDelivery = await call('run_workflow', { template: JSON.parse(readFileSync(example('echo/echo.json'), 'utf8')), input: { text: 'x' }, delivery: { kind: 'email' } });
    expect(badDelivery).toMatchObject({ isError: true, value: { error: { code: 'launch.bad-delivery' } } });
    const metadata = await call('run_workflow', { template: JSON.parse(readFileSync(example('echo/echo.json'), 'utf8')), input: { text: 'x' }, delivery: { kind: 'webhook', url: 'http://169.254.169.254/latest/meta-data/' } });
    expect(metadata).toMatchObject({ isError: true, value: { error: { code: 'launch.delivery-target-refused' } } });
    expect((await call('list_runs', {})).isError).toBe(false);
  });

  it('records the W3C trace context a client sends in _meta.traceparent', async () => {
    const template = JSON.parse(readFileSync(example('echo/echo.json'), 'utf8'));
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const result = (await client.callTool({ name: 'run_workflow', arguments: { template, input: { text: 'traced' } }, _meta: { traceparent } })) as { structuredContent?: any };
    expect(result.structuredContent).toMatchObject({ status: 'completed' });
    const events = await call('read_events', { runId: result.structuredContent.runId, limit: 1 });
    expect(events.value.events[0]).toMatchObject({ type: 'run.accepted', origin: { actor: 'mcp' }, correlation: { traceparent } });
  });
});


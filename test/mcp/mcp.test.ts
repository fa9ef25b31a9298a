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
    args: [cli, 'mcp', '--profile', 'invoke,author,operator', '--principal', 'alice', '--allow-inline', '--allow-deliveries', '--delivery-secrets', 'HOOK_SECRET', '--dir', tempDir('adw-mcp-'), '--config', example('echo/agent-workflow.config.mjs')],
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
      'workflow_approve', 'workflow_cancel', 'workflow_describe', 'workflow_diff', 'workflow_draft_get', 'workflow_draft_put', 'workflow_nodes_list', 'workflow_publish',
      'workflow_replay', 'workflow_resolve', 'workflow_run', 'workflow_run_get', 'workflow_runs_list', 'workflow_search', 'workflow_trace', 'workflow_validate',
    ]);
  });

  it('lists the node types with their config schemas', async () => {
    const { nodes } = (await call('workflow_nodes_list', {})).value as { nodes: { uses: string; configSchema: any }[] };
    expect(nodes.map((n) => n.uses)).toEqual(expect.arrayContaining(['core.start@1', 'tool.call@1', 'agent.run@1', 'human.approval@1']));
    expect(nodes.find((n) => n.uses === 'tool.call@1')!.configSchema).toMatchObject({ type: 'object', required: expect.arrayContaining(['tool']) });
  });

  it('validates, runs, inspects and replays a workflow', async () => {
    const template = JSON.parse(readFileSync(example('echo/echo.json'), 'utf8'));
    const invalid = await call('workflow_validate', { template: { ...template, spec: { ...template.spec, requires: [] } } });
    expect(invalid.value).toMatchObject({ ok: false, errors: [expect.objectContaining({ code: 'requires.missing', pointer: '/spec/nodes/1/uses' })] });

    const run = await call('workflow_run', { template, input: { text: 'from an agent' } });
    expect(run.isError).toBe(false);
    expect(run.value).toMatchObject({ status: 'completed', output: { echoed: 'from an agent' } });

    const events = await call('workflow_trace', { runId: run.value.runId, limit: 3 });
    expect(events.value.events.map((e: { type: string }) => e.type)).toEqual(['run.accepted', 'run.started', 'node.started']);
    expect(events.value.events[0].origin.actor).toBe('mcp');
    expect(events.value.more).toBe(true);
    expect((await call('workflow_run_get', { runId: run.value.runId })).value).toMatchObject({ status: 'completed', lastSeq: run.value.seq });
    expect((await call('workflow_replay', { runId: run.value.runId, mode: 'recorded' })).value).toMatchObject({ identical: true });
    expect((await call('workflow_runs_list', {})).value.runs).toHaveLength(1);
  });

  it('launches a run with a delivery target, kept in its correlation', async () => {
    const template = JSON.parse(readFileSync(example('echo/echo.json'), 'utf8'));
    const delivery = { kind: 'webhook', url: 'https://hooks.example.com/hook', secretRef: 'HOOK_SECRET' };
    const run = await call('workflow_run', { template, input: { text: 'delivered' }, delivery });
    expect(run.value).toMatchObject({ status: 'completed' });
    const events = await call('workflow_trace', { runId: run.value.runId, limit: 1 });
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
    const result = (await client.callTool({ name: 'workflow_run', arguments: { template, input: { text: 'watched' } }, _meta: { progressToken: 'watch-1' } })) as { structuredContent?: any };
    await new Promise((r) => setImmediate(r));
    expect(result.structuredContent).toMatchObject({ status: 'completed' });
    const seq = result.structuredContent.seq as number;
    expect(notes.map((n) => n.progress)).toEqual(Array.from({ length: seq }, (_, i) => i + 1));
    expect(notes.every((n) => n.progressToken === 'watch-1')).toBe(true);
    expect(notes[0].message).toBe('run.accepted');
    expect(notes.some((n) => n.message === 'run.completed')).toBe(true);
  });

  it('answers bad requests with a typed error and keeps serving', async () => {
    const missing = await call('workflow_run_get', { runId: 'run-does-not-exist' });
    expect(missing).toMatchObject({ isError: true, value: { error: { code: 'run.not-found' } } });
    const badInput = await call('workflow_run', { template: JSON.parse(readFileSync(example('echo/echo.json'), 'utf8')), input: {} });
    expect(badInput).toMatchObject({ isError: true, value: { error: { code: 'run.input-invalid' } } });
    const badDelivery = await call('workflow_run', { template: JSON.parse(readFileSync(example('echo/echo.json'), 'utf8')), input: { text: 'x' }, delivery: { kind: 'email' } });
    expect(badDelivery).toMatchObject({ isError: true, value: { error: { code: 'launch.bad-delivery' } } });
    const metadata = await call('workflow_run', { template: JSON.parse(readFileSync(example('echo/echo.json'), 'utf8')), input: { text: 'x' }, delivery: { kind: 'webhook', url: 'http://169.254.169.254/latest/meta-data/' } });
    expect(metadata).toMatchObject({ isError: true, value: { error: { code: 'launch.delivery-target-refused' } } });
    expect((await call('workflow_runs_list', {})).isError).toBe(false);
  });

  it('records the W3C trace context a client sends in _meta.traceparent', async () => {
    const template = JSON.parse(readFileSync(example('echo/echo.json'), 'utf8'));
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const result = (await client.callTool({ name: 'workflow_run', arguments: { template, input: { text: 'traced' } }, _meta: { traceparent } })) as { structuredContent?: any };
    expect(result.structuredContent).toMatchObject({ status: 'completed' });
    const events = await call('workflow_trace', { runId: result.structuredContent.runId, limit: 1 });
    expect(events.value.events[0]).toMatchObject({ type: 'run.accepted', origin: { actor: 'mcp' }, correlation: { traceparent } });
  });
});


// MCP profiles: the tool sets are fixed when the server starts; on the default profile (invoke)
// an agent can run a workflow but cannot approve its gate, publish, or cancel.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/node-host.js';
import { runCli } from '../helpers/cli.js';

const cli = new URL('../../dist/hosts/node/cli/main.js', import.meta.url).pathname;
const example = (p: string) => new URL(`../../examples/${p}`, import.meta.url).pathname;
const api = 'workflow.gm-hz.dev/v1alpha1';

const gated = {
  apiVersion: api,
  kind: 'WorkflowTemplate',
  metadata: { id: 'gated' },
  spec: {
    requires: ['approval'],
    nodes: [
      { id: 'start', uses: 'core.start@1' },
      { id: 'gate', uses: 'human.approval@1' },
      { id: 'end', uses: 'core.end@1' },
    ],
    edges: [
      { from: 'start', to: 'gate' },
      { from: 'gate', to: 'end' },
    ],
  },
};

const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
});

async function connect(dir: string, ...extra: string[]): Promise<Client> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [cli, 'mcp', '--dir', dir, '--config', example('echo/agent-workflow.config.mjs'), ...extra], stderr: 'ignore' });
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const call = async (client: Client, name: string, args: Record<string, unknown>) => {
  const result = (await client.callTool({ name, arguments: args })) as { structuredContent?: any; isError?: boolean; content?: { text: string }[] };
  return { value: result.structuredContent, isError: result.isError === true, text: result.content?.[0]?.text ?? '' };
};

describe('MCP profiles', () => {
  it('lists only the invoke tools by default', async () => {
    const client = await connect(tempDir('adw-mcp-'));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['describe_workflow', 'get_run', 'list_runs', 'read_events', 'replay_run', 'run_workflow', 'search_workflows']);
  });

  it('an agent on the default profile runs a gated workflow but cannot approve the gate', async () => {
    const dir = tempDir('adw-mcp-');
    const agent = await connect(dir);
    const run = await call(agent, 'run_workflow', { template: gated, input: {} });
    expect(run.value).toMatchObject({ status: 'paused' });
    const approve = await call(agent, 'decide_approval', { runId: run.value.runId, nodeId: 'gate', approved: true, by: 'the-agent' });
    expect(approve.isError).toBe(true);
    expect(approve.text).toMatch(/decide_approval not found/);
    expect((await call(agent, 'get_run', { runId: run.value.runId })).value).toMatchObject({ status: 'paused' });

    // An operator connection may.
    const operator = await connect(dir, '--profile', 'invoke,operator');
    const decided = await call(operator, 'decide_approval', { runId: run.value.runId, nodeId: 'gate', approved: true, by: 'alice' });
    expect(decided.value).toMatchObject({ status: 'completed' });
  });

  it('refuses an unknown profile with the usage exit code', async () => {
    const r = await runCli(['mcp', '--profile', 'invoke,root', '--dir', tempDir('adw-mcp-')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown MCP profile "root"');
  });
});

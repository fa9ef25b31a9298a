// MCP profiles and policy: the tool sets are fixed when the server starts; on the default profile
// (invoke) an agent can run a workflow but cannot approve its gate, publish, or cancel. Who acts is
// the session's principal, never an argument; inline templates and delivery targets only where
// the server's policy allows them.
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
    expect(tools.map((t) => t.name).sort()).toEqual(['workflow_describe', 'workflow_replay', 'workflow_run', 'workflow_run_get', 'workflow_runs_list', 'workflow_search', 'workflow_trace']);
  });

  it('an agent on the default profile runs a gated workflow but cannot approve the gate', async () => {
    const dir = tempDir('adw-mcp-');
    const agent = await connect(dir, '--allow-inline', '--principal', 'agent-7');
    const run = await call(agent, 'workflow_run', { template: gated, input: {} });
    expect(run.value).toMatchObject({ status: 'paused' });
    const approve = await call(agent, 'workflow_approve', { runId: run.value.runId, nodeId: 'gate', approved: true, by: 'the-agent' });
    expect(approve.isError).toBe(true);
    expect(approve.text).toMatch(/workflow_approve not found/);
    expect((await call(agent, 'workflow_run_get', { runId: run.value.runId })).value).toMatchObject({ status: 'paused' });

    // An operator connection may.
    const operator = await connect(dir, '--profile', 'invoke,operator', '--principal', 'alice');
    // Self-asserted identity is refused, not believed.
    const asserted = await call(operator, 'workflow_approve', { runId: run.value.runId, nodeId: 'gate', approved: true, by: 'bob' });
    expect(asserted).toMatchObject({ isError: true, value: { error: { code: 'mcp.identity-argument' } } });
    const decided = await call(operator, 'workflow_approve', { runId: run.value.runId, nodeId: 'gate', approved: true });
    expect(decided.value).toMatchObject({ status: 'completed' });

    // The journal names the session principals: the launch's authority and the approver.
    const trace = (await call(operator, 'workflow_trace', { runId: run.value.runId })).value.events as any[];
    expect(trace[0]).toMatchObject({ type: 'run.accepted', payload: { authority: { id: 'agent-7' } } });
    const decision = trace.find((e) => JSON.stringify(e).includes('"approved":true'));
    expect(JSON.stringify(decision)).toContain('"alice"');
    expect(JSON.stringify(trace)).not.toContain('"bob"');
  });

  it('runs published revisions only, unless the server allows inline templates', async () => {
    const dir = tempDir('adw-mcp-');
    const author = await connect(dir, '--profile', 'invoke,author', '--principal', 'carol');
    const inline = await call(author, 'workflow_run', { template: gated, input: {} });
    expect(inline).toMatchObject({ isError: true, value: { error: { code: 'mcp.inline-not-allowed' } } });
    expect((await call(author, 'workflow_runs_list', {})).value.runs).toHaveLength(0);

    const draft = await call(author, 'workflow_draft_put', { template: gated, expectedDraftRevision: 0 });
    expect(draft.value.draft).toMatchObject({ id: 'gated', draftRevision: 1 });
    const published = await call(author, 'workflow_publish', { id: 'gated', expectedDraftRevision: 1 });
    expect(published.value.revision).toMatchObject({ id: 'gated', revision: 1, publishedBy: 'carol' });
    const run = await call(author, 'workflow_run', { id: 'gated', revision: 1, input: {} });
    expect(run.value).toMatchObject({ status: 'paused' });
  });

  it('takes a delivery target only where the server allows it, and only secretRefs it names', async () => {
    const dir = tempDir('adw-mcp-');
    const webhook = { kind: 'webhook', url: 'https://hooks.example.com/hook' };
    const closed = await connect(dir, '--allow-inline');
    expect(await call(closed, 'workflow_run', { template: gated, input: {}, delivery: webhook })).toMatchObject({ isError: true, value: { error: { code: 'mcp.delivery-not-allowed' } } });

    const open = await connect(dir, '--allow-inline', '--allow-deliveries', '--delivery-secrets', 'HOOK_SECRET');
    const foreign = await call(open, 'workflow_run', { template: gated, input: {}, delivery: { ...webhook, secretRef: 'DATABASE_PASSWORD' } });
    expect(foreign).toMatchObject({ isError: true, value: { error: { code: 'mcp.secret-not-allowed' } } });
    expect((await call(open, 'workflow_runs_list', {})).value.runs).toHaveLength(0);
    const allowed = await call(open, 'workflow_run', { template: gated, input: {}, delivery: { ...webhook, secretRef: 'HOOK_SECRET' } });
    expect(allowed.value).toMatchObject({ status: 'paused' });
  });

  it('refuses --delivery-secrets without --allow-deliveries with the usage exit code', async () => {
    const r = await runCli(['mcp', '--delivery-secrets', 'X', '--dir', tempDir('adw-mcp-')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--allow-deliveries');
  });

  it('refuses an unknown profile with the usage exit code', async () => {
    const r = await runCli(['mcp', '--profile', 'invoke,root', '--dir', tempDir('adw-mcp-')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown MCP profile "root"');
  });
});

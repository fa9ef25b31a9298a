// The MCP gateway over Streamable HTTP on `serve --http --http-mcp`, spoken to by the MCP SDK's own
// client: each request acts as its bearer token's principal (a named operator's name), so a
// remote agent cannot approve as someone else; a read-only token and no token are refused.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aliceToken, bobToken, consoleWorld, gated, readonlyToken, serveHttp, type Served } from '../console/helpers.js';

const w = consoleWorld();
let served: Served;
const clients: Client[] = [];

beforeAll(async () => {
  served = await serveHttp(w, ['--http-mcp', 'invoke,operator', '--mcp-allow-inline']);
}, 60_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await served?.stop();
});

async function connect(token: string | undefined): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${served.base}/v1/mcp`), { requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} } });
  const client = new Client({ name: 'remote-agent', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const call = async (client: Client, name: string, args: Record<string, unknown>) => {
  const result = (await client.callTool({ name, arguments: args })) as { structuredContent?: any; isError?: boolean };
  return { value: result.structuredContent, isError: result.isError === true };
};

describe('the MCP gateway over HTTP', () => {
  it("acts as the token's principal: alice launches and approves her gate, bob cannot, a body's by is refused", async () => {
    const alice = await connect(aliceToken);
    expect((await alice.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['workflow_run', 'workflow_approve', 'workflow_trace']));
    const onlyAlice = structuredClone(gated);
    onlyAlice.metadata.id = 'gated-for-alice';
    onlyAlice.spec.nodes[1].config.approvers = ['alice'];
    const run = await call(alice, 'workflow_run', { template: onlyAlice, input: {} });
    expect(run.value).toMatchObject({ status: 'paused', pausedReason: 'approval' });
    const runId = run.value.runId as string;

    const bob = await connect(bobToken);
    expect(await call(bob, 'workflow_approve', { runId, nodeId: 'gate', approved: true })).toMatchObject({ isError: true, value: { error: { code: 'approval.not-allowed' } } });
    expect(await call(bob, 'workflow_approve', { runId, nodeId: 'gate', approved: true, by: 'alice' })).toMatchObject({ isError: true, value: { error: { code: 'mcp.identity-argument' } } });
    expect(await call(alice, 'workflow_approve', { runId, nodeId: 'gate', approved: true })).toMatchObject({ isError: false, value: { status: 'completed' } });

    const events = (await call(alice, 'workflow_trace', { runId })).value.events as any[];
    expect(events[0]).toMatchObject({ type: 'run.accepted', origin: { actor: 'mcp' }, payload: { authority: { id: 'alice' } } });
    expect(events.find((e) => e.type === 'capability.completed' && e.payload.output?.approved !== undefined)?.payload.output).toMatchObject({ approved: true, by: 'alice' });
  }, 60_000);

  it('refuses a read-only token (403) and a request without one (401)', async () => {
    for (const [token, status, code] of [[readonlyToken, 403, 'http.forbidden'], [undefined, 401, 'http.unauthorized']] as const) {
      const res = await fetch(`${served.base}/v1/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
      });
      expect(res.status).toBe(status);
      expect((await res.json()).error.code).toBe(code);
    }
  });
});

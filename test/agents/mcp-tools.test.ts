import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { mcpTools, type McpTools } from '../../hosts/node/agents/mcp-tools.js';
import type { ToolContext } from '../../hosts/core/gateway-registry.js';

const server = fileURLToPath(new URL('../fixtures/mcp-log-server.mjs', import.meta.url));
const context = { runId: 'r1', nodeId: 'n1', attempt: 1 } as ToolContext;
let open: McpTools | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

describe('mcpTools over stdio', () => {
  it('registers only allowed tools, namespaced, with their descriptions, schemas and hints, and calls reach the server', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'mcp-log-')), 'calls.log');
    open = await mcpTools({ servers: [{ name: 'notes', transport: { command: process.execPath, args: [server, log] }, allow: ['lookup', 'save'] }] });
    expect(Object.keys(open.tools).sort()).toEqual(['notes.lookup', 'notes.save']);
    const lookup = open.tools['notes.lookup']!;
    expect({ description: lookup.description, readOnly: lookup.readOnly, idempotent: lookup.idempotent }).toEqual({ description: 'Looks a word up', readOnly: true, idempotent: undefined });
    expect(lookup.inputSchema).toMatchObject({ type: 'object', properties: { word: { type: 'string' } }, required: ['word'] });
    expect({ readOnly: open.tools['notes.save']!.readOnly, idempotent: open.tools['notes.save']!.idempotent }).toEqual({ readOnly: undefined, idempotent: true });
    expect(await lookup.execute({ word: 'dag' }, context)).toBe('definition of dag');
    expect(await open.tools['notes.save']!.execute({ note: 'hi' }, context)).toBe('saved');
    expect(readFileSync(log, 'utf8').trim().split('\n').map((line) => JSON.parse(line))).toEqual([
      { tool: 'lookup', word: 'dag' },
      { tool: 'save', note: 'hi' },
    ]);
  });

  it('registers every tool when there is no allow-list, and a tool outside an allow-list never reaches the server', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'mcp-log-')), 'calls.log');
    open = await mcpTools({ servers: [{ name: 'all', transport: { command: process.execPath, args: [server, log] } }, { name: 'some', transport: { command: process.execPath, args: [server, log] }, allow: ['lookup'] }] });
    expect(Object.keys(open.tools).sort()).toEqual(['all.erase', 'all.lookup', 'all.save', 'some.lookup']);
    expect(open.tools['some.erase']).toBeUndefined();
    expect(existsSync(log)).toBe(false);
  });
});

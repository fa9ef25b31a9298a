// What a Node process loads to run workflows: the package entry, a runtime on SQLite and a run of
// a tool never load the HTTP client used for result deliveries (undici, ~15 MB of resident
// memory), the PostgreSQL driver, the MCP SDK or the script sandbox, nor what only triggers, the
// HTTP API or a page need (ajv, node:http, @noble/hashes), which a cold start would pay for
// (bench/cold/README.md); a delivery loads undici when it is sent. Each case is a fresh Node
// process whose module resolutions are recorded by a resolve hook.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const entry = new URL('../../dist/hosts/node/index.js', import.meta.url).href;
const sendModule = new URL('../../dist/hosts/node/delivery/send.js', import.meta.url).href;

const hooks = `data:text/javascript,${encodeURIComponent("export async function resolve(s, c, next) { const r = await next(s, c); process.stderr.write('resolved ' + r.url + '\\n'); return r; }")}`;
// A resolve hook does not see `require` (pg and ajv load through createRequire): what CommonJS
// loaded is read from the module cache at exit.
const register = `data:text/javascript,${encodeURIComponent(`import { createRequire, register } from 'node:module'; import { pathToFileURL } from 'node:url'; register(${JSON.stringify(hooks)}); process.on('exit', () => { for (const f of Object.keys(createRequire(process.cwd() + '/').cache)) process.stderr.write('resolved ' + pathToFileURL(f).href + '\\n'); });`)}`;

function resolvedBy(script: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'lazy-imports-'));
  const r = spawnSync(process.execPath, ['--import', register, '--input-type=module', '-e', script, dir], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout).toContain('done');
  return r.stderr.split('\n').filter((l) => l.startsWith('resolved ')).map((l) => l.slice('resolved '.length));
}

const packageOf = (url: string) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];

describe('modules a Node process loads on first need', () => {
  it('a runtime on SQLite running a tool loads neither undici, pg, the MCP SDK, QuickJS, ajv, node:http nor @noble/hashes', () => {
    const urls = resolvedBy(`
      const { WorkflowRuntime } = await import(${JSON.stringify(entry)});
      const api = 'workflow.gm-hz.dev/v1alpha1';
      const nodes = [{ id: 'start', uses: 'core.start@1' }, { id: 'a', uses: 'tool.call@1', config: { tool: 'noop' } }, { id: 'end', uses: 'core.end@1' }];
      const template = { apiVersion: api, kind: 'WorkflowTemplate', metadata: { id: 'lazy' }, spec: { requires: ['tool:noop'], nodes, edges: [{ from: 'start', to: 'a' }, { from: 'a', to: 'end' }] } };
      const rt = await WorkflowRuntime.open({ dir: process.argv[1], tools: { noop: { execute: () => ({ ok: 1 }) } }, log: () => undefined });
      const result = await (await rt.launch(template, { input: {} })).result;
      await rt.close();
      if (result.status !== 'completed') throw new Error(result.status);
      console.log('done');
    `);
    const packages = new Set(urls.map(packageOf).filter((p) => p !== undefined));
    expect(packages.has('better-sqlite3')).toBe(true);
    for (const p of ['undici', 'pg', '@modelcontextprotocol/sdk', 'quickjs-emscripten', 'quickjs-emscripten-core', 'ajv', '@noble/hashes']) expect(packages.has(p), p).toBe(false);
    for (const builtin of ['node:http', 'node:https', 'node:net']) expect(urls, builtin).not.toContain(builtin);
  });

  it('a trigger input check loads ajv when it runs', () => {
    const urls = resolvedBy(`
      const { schemaProblems } = await import(${JSON.stringify(new URL('../../dist/hosts/node/triggers/input-schema.js', import.meta.url).href)});
      const problems = schemaProblems({ type: 'object', required: ['a'] }, {});
      if (problems.length !== 1) throw new Error(JSON.stringify(problems));
      console.log('done');
    `);
    expect(urls.some((u) => packageOf(u) === 'ajv')).toBe(true);
  });

  it('a delivery loads undici when it is sent', () => {
    const urls = resolvedBy(`
      const { sendDelivery } = await import(${JSON.stringify(sendModule)});
      const http = await import('node:http');
      const server = http.createServer((req, res) => { req.resume(); req.on('end', () => res.end('ok')); });
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      process.env.ADW_DELIVERY_ALLOW_TARGETS = '127.0.0.1:' + server.address().port;
      const d = { id: 'd1', runId: 'r1', phase: 'terminal', runStatus: 'completed', payload: {}, target: { kind: 'webhook', url: 'http://127.0.0.1:' + server.address().port + '/hook' } };
      const result = await sendDelivery(d, { timeoutMs: 5000, now: 1 });
      server.close();
      if (!result.ok) throw new Error(JSON.stringify(result));
      console.log('done');
    `);
    expect(urls.some((u) => packageOf(u) === 'undici')).toBe(true);
  });
});

// Every entry of package.json's `exports` imports by its package name (as a user's code does, in
// a child process) and exports what the docs say it does; the design's entries are among them.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { name: string; exports: Record<string, string> };

/** What each entry must export (a subset; more is fine). */
const expected: Record<string, string[]> = {
  '.': ['WorkflowRuntime', 'WorkflowError'],
  './core': [],
  './mcp': ['createMcpGateway', 'serveMcp', 'mcpToolProfiles'],
  './ai': ['aiSdkModel'],
  './mcp-client': ['mcpTools'],
  './dsh': ['openDshRuntime', 'dshRuntimeOptions', 'dshAuthority'],
  './canvas': ['startCanvas', 'startHttpApi'],
  './triggers': ['BindingCatalog', 'TriggerPipeline', 'parseBindingSpec', 'mapInput'],
  './triggers/cron': ['CronBindingScheduler'],
  './triggers/webhook': ['handleWebhook', 'signStandardWebhook', 'signWebhook'],
  './triggers/dingtalk': ['handleDingtalk', 'signDingtalk'],
  './sandbox': [],
  './sandbox/service': [],
  './router': [],
  './browser': [],
};

/** The names an entry exports, imported by package name in a fresh process. */
function exportsOf(entry: string): string[] {
  const specifier = entry === '.' ? pkg.name : `${pkg.name}/${entry.slice(2)}`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(specifier)}); console.log(JSON.stringify(Object.keys(m)));`], { cwd: root, encoding: 'utf8' });
  return JSON.parse(out) as string[];
}

describe('package entries', () => {
  it('reports the version package.json has: the MCP gateway and agent-workflow --version', async () => {
    const { packageVersion } = await import('../../dist/hosts/node/version.js');
    expect(packageVersion).toBe((pkg as unknown as { version: string }).version);
    expect(execFileSync(process.execPath, [`${root}dist/hosts/node/cli/main.js`, '--version'], { encoding: 'utf8' }).trim()).toBe(packageVersion);
  });

  it('has the design\'s entries', () => {
    expect(Object.keys(pkg.exports)).toEqual(expect.arrayContaining(['./dsh', './canvas', './triggers', './triggers/cron', './triggers/webhook', './triggers/dingtalk']));
  });

  it('imports each by its package name and finds what it should export', () => {
    for (const [entry, names] of Object.entries(expected)) {
      expect(pkg.exports[entry], entry).toBeDefined();
      const got = exportsOf(entry);
      expect(got.length, entry).toBeGreaterThan(0);
      for (const name of names) expect(got, `${entry} exports ${name}`).toContain(name);
    }
  });
});

// Run input from stdin, over-deep input refused before the engine, and the CLI recorded as the
// run's actor; each checked on the real CLI against a real state directory.
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { examplePath, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/node-host.js';

const echo = [examplePath('echo/echo.json'), '--config', examplePath('echo/agent-workflow.config.mjs')];

describe('CLI input', () => {
  it('reads --input - from stdin', async () => {
    const dir = tempDir('adw-cli-in-');
    const r = await runCli(['run', ...echo, '--dir', dir, '--input', '-'], { stdin: '{"text":"from stdin"}' });
    expect(r.code).toBe(0);
    expect(r.out).toEqual([expect.objectContaining({ kind: 'RunResult', status: 'completed', output: { echoed: 'from stdin' } })]);
  });

  it('answers bad JSON on stdin with cli.bad-json, exit 3', async () => {
    const r = await runCli(['run', ...echo, '--dir', tempDir('adw-cli-in-'), '--input', '-'], { stdin: '{"text": nope' });
    expect(r.code).toBe(3);
    expect(r.out).toEqual([expect.objectContaining({ kind: 'Error', error: expect.objectContaining({ code: 'cli.bad-json', message: expect.stringContaining('stdin') }) })]);
  });

  it('reads resolve --succeeded - from stdin', async () => {
    // No run to settle: the stdin JSON is read and parsed first, then the run is looked up.
    const bad = await runCli(['resolve', 'run-x', 'node-x', '--succeeded', '-', '--dir', tempDir('adw-cli-in-')], { stdin: 'not json' });
    expect(bad.code).toBe(3);
    expect(bad.out[0].error).toMatchObject({ code: 'cli.bad-json', message: expect.stringContaining('--succeeded -') });
  });

  it('refuses an input nested 100,000 deep with run.input-invalid, exit 3, before the engine', async () => {
    const dir = tempDir('adw-cli-in-');
    const file = join(dir, 'deep.json');
    writeFileSync(file, `{"text":"x","d":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    const r = await runCli(['run', ...echo, '--dir', dir, '--input', file]);
    expect(r.code).toBe(3);
    expect(r.out).toEqual([expect.objectContaining({ kind: 'Error', error: expect.objectContaining({ code: 'run.input-invalid' }) })]);
    expect(r.stderr).not.toContain('trapped');
  });

  it('records cli as the actor of run.accepted', async () => {
    const dir = tempDir('adw-cli-in-');
    const run = await runCli(['run', ...echo, '--dir', dir, '--input', '{"text":"who"}']);
    expect(run.code).toBe(0);
    const trace = await runCli(['trace', run.out[0].runId, '--format', 'json', '--dir', dir]);
    const accepted = trace.out[0].events[0];
    expect(accepted).toMatchObject({ type: 'run.accepted', origin: { actor: 'cli' } });
  });
});

// Every command answers --help / -h / `help <command>` on stdout with exit 0, from the one usage
// table; importing the `./cli` export runs nothing; the bin works through npm's symlink.
import { execFile } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliMain, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/node-host.js';

/** The command names the overview lists (`  <name> <synopsis>` lines under "commands:"). */
async function listedCommands(): Promise<string[]> {
  const r = await runCli(['--help']);
  expect(r.code).toBe(0);
  const section = r.stdout.split('commands:\n')[1].split('\n\n')[0];
  return section
    .split('\n')
    .filter((l) => /^ {2}\S/.test(l))
    .map((l) => l.trim().split(' ')[0]);
}

describe('CLI help', () => {
  it('prints the overview on stdout for --help, -h and help', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const r = await runCli(args);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('usage: agent-workflow <command>');
      expect(r.stdout).toContain('11  storage full');
    }
    const bare = await runCli([]);
    expect(bare.code).toBe(2);
    expect(bare.stdout).toBe('');
  });

  it('answers <command> --help, <command> -h and help <command> for every command', async () => {
    const names = await listedCommands();
    expect(names).toEqual(expect.arrayContaining(['validate', 'run', 'trace', 'runs', 'resume', 'cancel', 'approve', 'reject', 'resolve', 'export', 'replay', 'draft', 'publish', 'search', 'describe', 'diff', 'migrate-template', 'router', 'serve', 'mcp', 'sandbox']));
    for (const name of names) {
      // Every command answers --help; -h and `help <command>` share its path, checked on a few.
      const forms = ['run', 'mcp', 'help', 'draft'].includes(name) ? [[name, '--help'], [name, '-h'], ['help', name]] : [[name, '--help']];
      for (const args of forms) {
        const r = await runCli(args, { cwd: tempDir('adw-help-') });
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
        expect(r.stdout.startsWith(`usage: agent-workflow ${name} `), args.join(' ')).toBe(true);
        expect(r.stderr).toBe('');
      }
    }
    const run = await runCli(['run', 'x.json', '--input', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('--input <json|file|->');
  });

  it('refuses help for an unknown command with the usage exit code', async () => {
    const r = await runCli(['help', 'no-such-command']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "no-such-command"');
  });
});

describe('CLI entry', () => {
  it('does nothing when the ./cli export is imported, only exports main and exitCodes', async () => {
    const script = `import(${JSON.stringify(cliMain)}).then((m) => { process.stdout.write(JSON.stringify({ keys: Object.keys(m).sort(), exitCode: process.exitCode ?? 0 })); })`;
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, ['--input-type=module', '-e', script], (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 70) : 0, stdout, stderr })),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ keys: ['exitCodes', 'main'], exitCode: 0 });
  });

  it('runs as the bin through a symlink like the one npm installs', async () => {
    const bin = join(tempDir('adw-bin-'), 'node_modules', '.bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(cliMain, join(bin, 'agent-workflow'));
    const r = await runCli(['validate', '--help'], { script: join(bin, 'agent-workflow') });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('usage: agent-workflow validate <template.json>');
  });
});

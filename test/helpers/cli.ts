// Runs the built CLI as a child process, the way a person or a script would.
import { spawn } from 'node:child_process';

export const cliMain = new URL('../../dist/hosts/node/cli/main.js', import.meta.url).pathname;
export const examplePath = (p: string) => new URL(`../../examples/${p}`, import.meta.url).pathname;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout's JSON lines, parsed (non-JSON lines are skipped). */
  out: any[];
}

export function runCli(args: string[], options: { cwd?: string; stdin?: string; uid?: number; gid?: number; script?: string } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [options.script ?? cliMain, ...args], {
      cwd: options.cwd,
      env: { ...process.env, USER: 'tester' },
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid ?? options.uid } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => {
      const out = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l));
      resolve({ code: code ?? 70, stdout, stderr, out });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
  });
}

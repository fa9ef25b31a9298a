// Numbers on the CLI's command line and in its JSON inputs: a mistyped or out-of-range numeric
// option is a usage error (exit 2) before anything is opened, a run input integer beyond 2^53-1
// is refused (exit 3) instead of run rounded, and a bad token file is a typed configuration error.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { examplePath, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/node-host.js';

const echo = [examplePath('echo/echo.json'), '--config', examplePath('echo/agent-workflow.config.mjs')];

async function usage(args: string[]) {
  const r = await runCli([...args, '--dir', tempDir('adw-cli-num-')]);
  return { code: r.code, stdout: r.stdout, stderr: r.stderr.split('\n')[0] };
}

// A usage error is said on stderr, with nothing on stdout.
const refused = (message: string) => ({ code: 2, stdout: '', stderr: `agent-workflow: ${message}` });

describe('numeric options', () => {
  it('runs --limit abc is a usage error, not a store type mismatch', async () => {
    expect(await usage(['runs', '--limit', 'abc'])).toEqual(refused('--limit takes a whole number from 1 to 1000, got "abc"'));
  });

  it('ingress list --limit beyond its documented maximum is a usage error', async () => {
    expect(await usage(['ingress', 'list', '--limit', '10001'])).toEqual(refused('--limit takes a whole number from 1 to 10000, got "10001"'));
    expect(await usage(['ingress', 'list', '--after', '9007199254740993'])).toEqual(refused('--after takes a whole number from 0 to 9007199254740991, got "9007199254740993"'));
  });

  it('every other numeric option is checked the same way', async () => {
    const cases: [string[], string][] = [
      [['runs', '--limit', '0'], '--limit takes a whole number from 1 to 1000, got "0"'],
      [['runs', '--limit', '1e3'], '--limit takes a whole number from 1 to 1000, got "1e3"'],
      [['resolve', 'r', 'n', '--retry', '--item', '99999999999999999999'], '--item takes a whole number from 0 to 9007199254740991, got "99999999999999999999"'],
      [['serve', '--http', '70000'], '--http takes a whole number from 0 to 65535, got "70000"'],
      [['serve', '--drain-ms', '-5'], '--drain-ms takes a whole number from 1 to 2147483647, got "-5"'],
      [['deliveries', 'list', '--limit', '10001'], '--limit takes a whole number from 1 to 10000, got "10001"'],
      [['replay-web', 'r', '--port', ' 80'], '--port takes a whole number from 0 to 65535, got " 80"'],
    ];
    const got = [];
    for (const [args] of cases) got.push(await usage(args));
    expect(got).toEqual(cases.map(([, message]) => refused(message)));
  });
});

describe('JSON numbers in a run input', () => {
  it('an integer beyond 2^53-1 in an --input file is refused with run.input-invalid, exit 3', async () => {
    const dir = tempDir('adw-cli-num-');
    const file = join(dir, 'big.json');
    writeFileSync(file, '{"text":"x","id":9007199254740993}');
    const r = await runCli(['run', ...echo, '--dir', dir, '--input', file]);
    expect(r.code).toBe(3);
    expect(r.out).toEqual([{ apiVersion: expect.any(String), kind: 'Error', error: expect.objectContaining({ code: 'run.input-invalid', message: 'the run input is not plain JSON: the integer 9007199254740992 is beyond 2^53-1 and cannot be kept exactly as a JSON number (pass it as a string) at /id' }) }]);
    const list = await runCli(['runs', '--dir', dir]);
    expect(list.out).toEqual([expect.objectContaining({ kind: 'RunList', runs: [] })]);
  });

  it('the largest exact integer still runs', async () => {
    const dir = tempDir('adw-cli-num-');
    const r = await runCli(['run', ...echo, '--dir', dir, '--input', '{"text":"9007199254740991","n":9007199254740991}']);
    expect(r.code).toBe(0);
    expect(r.out).toEqual([expect.objectContaining({ kind: 'RunResult', status: 'completed', output: { echoed: '9007199254740991' } })]);
  });
});

describe('the HTTP token file', () => {
  it('an empty token file is http.bad-token-file, exit 2; a missing one http.token-file-not-found, exit 6', async () => {
    const dir = tempDir('adw-cli-num-');
    const empty = join(dir, 'token');
    writeFileSync(empty, '\n');
    const r = await runCli(['serve', '--dir', dir, '--http', '0', '--http-token-file', empty]);
    expect({ code: r.code, error: r.out[r.out.length - 1]?.error }).toEqual({ code: 2, error: { code: 'http.bad-token-file', message: `token file ${empty}: token file is empty` } });
    const missing = await runCli(['serve', '--dir', dir, '--http', '0', '--http-token-file', join(dir, 'nope')]);
    expect({ code: missing.code, error: missing.out[missing.out.length - 1]?.error }).toEqual({ code: 6, error: { code: 'http.token-file-not-found', message: `token file ${join(dir, 'nope')} does not exist` } });
  });
});

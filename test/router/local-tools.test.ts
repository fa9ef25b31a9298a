import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { classifyAttempt, LocalToolError, LocalToolLauncher, recoverAttempts, renderArgs, type LocalToolTable } from '../../hosts/router/local-tools.js';
import { observeProcess, parseProcStat, readBootId } from '../../hosts/shared/process-identity.js';
import { ReceiptLog, type AttemptReceipts } from '../../hosts/router/receipt-log.js';
import { stepClock, tempDir } from './helpers.js';

const toolScript = path.join(import.meta.dirname, 'fixtures/tool.mjs');
const node = process.execPath;
const tools: LocalToolTable = {
  echo: { executable: node, args: [toolScript, 'echo', '--path', '{{input.path}}', '--n={{input.n}}'], timeoutMs: 20_000, idempotent: true },
  fail: { executable: node, args: [toolScript, 'fail'], timeoutMs: 20_000 },
  text: { executable: node, args: [toolScript, 'text'], timeoutMs: 20_000 },
  sleep: { executable: node, args: [toolScript, 'sleep'], timeoutMs: 20_000 },
  stubborn: { executable: node, args: [toolScript, 'stubborn', '{{input.ready}}'], timeoutMs: 20_000 },
  slow: { executable: node, args: [toolScript, 'sleep'], timeoutMs: 50 },
  missing: { executable: '/nonexistent/tool', args: [], timeoutMs: 1000 },
};

const logs: ReceiptLog[] = [];
function receiptLog(dir = tempDir()): ReceiptLog {
  const log = ReceiptLog.open(dir, stepClock());
  logs.push(log);
  return log;
}
afterEach(() => {
  for (const log of logs.splice(0)) log.close();
});

function toolError(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    return error instanceof LocalToolError ? error.code : `other: ${String(error)}`;
  }
  return 'no error';
}

/** Waits until the tool has written its ready file (its SIGTERM handler is in place then). */
async function waitForFile(file: string): Promise<void> {
  while (!fs.existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('argument templates', () => {
  it('substitutes scalars of the input, never through a shell', () => {
    expect(renderArgs(['--path', '{{input.path}}', '--n={{ input.a.n }}', 'x{{input.ok}}'], { path: 'a b;$(rm -rf /)', a: { n: 3 }, ok: true })).toEqual([
      '--path',
      'a b;$(rm -rf /)',
      '--n=3',
      'xtrue',
    ]);
  });

  it('refuses missing, structured, option-like and NUL values', () => {
    expect(toolError(() => renderArgs(['{{input.path}}'], {}))).toBe('tool.bad-input');
    expect(toolError(() => renderArgs(['{{input.path}}'], { path: { a: 1 } }))).toBe('tool.bad-input');
    expect(toolError(() => renderArgs(['{{input.path}}'], { path: '--delete-all' }))).toBe('tool.bad-input');
    expect(toolError(() => renderArgs(['{{input.path}}'], { path: 'a\0b' }))).toBe('tool.bad-input');
    expect(toolError(() => renderArgs(['{{input.constructor}}'], {}))).toBe('tool.bad-input');
    expect(renderArgs(['--opt={{input.path}}'], { path: '-x' })).toEqual(['--opt=-x']);
  });

  it('refuses bad declarations: relative executables, shell strings, bad names, bad timeouts', () => {
    const receipts = receiptLog();
    const declare = (t: LocalToolTable) => toolError(() => new LocalToolLauncher({ tools: t, receipts }));
    expect(declare({ sh: { executable: 'sh', args: ['-c', 'echo hi'], timeoutMs: 10 } })).toBe('tool.bad-declaration');
    // A "command line" is taken literally as one file name: accepted here, it runs nothing but that file.
    expect(declare({ sh: { executable: '/bin/sh -c "echo hi"', args: [], timeoutMs: 10 } })).toBe('no error');
    expect(declare({ '../x': { executable: node, args: [], timeoutMs: 10 } })).toBe('tool.bad-declaration');
    expect(declare({ t: { executable: node, args: [], timeoutMs: 0 } })).toBe('tool.bad-declaration');
    expect(declare({ t: { executable: node, args: ['a\0'], timeoutMs: 10 } })).toBe('tool.bad-declaration');
  });
});

describe('LocalToolLauncher', () => {
  it('writes claimed and started receipts with the process identity, then a completion receipt', async () => {
    const dir = tempDir();
    let receipts = receiptLog(dir);
    const launcher = new LocalToolLauncher({ tools, receipts });
    const attempt = launcher.start('inv-1', 'echo', { path: 'a b;$(x)', n: 7 });
    // The started receipt exists as soon as start returns, with the identity of that very process.
    const start = receipts.get('inv-1')!.start!;
    expect(attempt.start).toEqual(start);
    expect(start.pid).toBe(attempt.pid);
    expect(start.identity).toMatchObject({ pid: attempt.pid, bootId: readBootId() });
    expect(start.identity!.startTicks).toMatch(/^\d+$/);
    expect(receipts.get('inv-1')!.claim).toMatchObject({ tool: 'echo', idempotent: true });
    // Times come from the injected clock: claim first, then start.
    expect(start.startedAt).toBeGreaterThan(receipts.get('inv-1')!.claim.claimedAt);
    const completion = await attempt.result;
    expect(completion).toMatchObject({
      invocationId: 'inv-1',
      exitCode: 0,
      signal: null,
      output: { args: ['--path', 'a b;$(x)', '--n=7'], env: [], pid: attempt.pid },
    });
    expect(completion.outputError).toBeUndefined();
    expect(launcher.inFlight).toBe(0);
    // Durable: a reopened log holds the same three receipts.
    receipts.close();
    logs.splice(logs.indexOf(receipts), 1);
    receipts = receiptLog(dir);
    expect(receipts.get('inv-1')).toEqual({ claim: expect.any(Object), start, completion });
  });

  it('records failures: exit code with stderr tail, non-JSON stdout, missing executable, timeout', async () => {
    const receipts = receiptLog();
    const launcher = new LocalToolLauncher({ tools, receipts, stopGraceMs: 5000 });
    const failed = await launcher.start('f', 'fail', {}).result;
    expect(failed).toMatchObject({ exitCode: 3, outputError: 'exit code 3' });
    expect(failed.stderrTail.endsWith('the end of stderr')).toBe(true);
    expect(failed.stderrTail.length).toBe(4096);
    expect(await launcher.start('t', 'text', {}).result).toMatchObject({ exitCode: 0, outputError: 'stdout is not JSON' });
    const missing = launcher.start('m', 'missing', {});
    expect(missing.start).toBeUndefined();
    expect(await missing.result).toMatchObject({ exitCode: null, outputError: expect.stringContaining('spawn failed') });
    expect(await launcher.start('s', 'slow', {}).result).toMatchObject({ signal: 'SIGTERM', stopIntent: 'timeout' });
    expect(receipts.get('s')!.stop).toMatchObject({ intent: 'timeout' });
  });

  it('refuses unknown tools, bad invocation ids and a second attempt under one id', async () => {
    const receipts = receiptLog();
    const launcher = new LocalToolLauncher({ tools, receipts });
    expect(toolError(() => launcher.start('x', 'nope', {}))).toBe('tool.unknown');
    expect(toolError(() => launcher.start('x', 'toString', {}))).toBe('tool.unknown');
    expect(() => launcher.start('../x', 'echo', { path: 'p', n: 1 })).toThrow(/not a portable id/);
    await launcher.start('once', 'echo', { path: 'p', n: 1 }).result;
    expect(() => launcher.start('once', 'echo', { path: 'p', n: 1 })).toThrow(/already claimed/);
    expect(receipts.all().map((a) => a.claim.invocationId)).toEqual(['once']);
  });

  it('stopAll: SIGTERM, bounded grace, SIGKILL, a receipt for each; nothing starts afterwards', async () => {
    const receipts = receiptLog();
    const launcher = new LocalToolLauncher({ tools, receipts, stopGraceMs: 300 });
    const polite = launcher.start('polite', 'sleep', {});
    const ready = path.join(tempDir(), 'ready');
    const stubborn = launcher.start('stubborn', 'stubborn', { ready });
    await waitForFile(ready);
    const first = launcher.stopAll('shutdown');
    expect(launcher.stopAll('again')).toBe(first);
    expect(toolError(() => launcher.start('late', 'sleep', {}))).toBe('tool.stopped');
    const completions = await first;
    expect(completions.map((c) => [c.invocationId, c.signal, c.stopIntent])).toEqual([
      ['polite', 'SIGTERM', 'shutdown'],
      ['stubborn', 'SIGKILL', 'shutdown'],
    ]);
    expect(await polite.result).toEqual(completions[0]);
    expect(receipts.get('stubborn')!.stop).toMatchObject({ intent: 'shutdown' });
    expect(receipts.get('late')).toBeUndefined();
    expect(observeProcess(stubborn.pid!).kind).toBe('absent');
  });
});

describe('startup recovery classification', () => {
  const bootId = 'boot-a';
  const identity = { pid: 4242, startTicks: '1000', bootId };
  const claim = { invocationId: 'i', tool: 'echo', idempotent: false, claimedAt: 1 };
  const start = { invocationId: 'i', pid: 4242, identity, startedAt: 2 };
  const completion = { invocationId: 'i', exitCode: 0, signal: null, output: { ok: true }, stderrTail: '', endedAt: 3 };
  const present = (startTicks: string, zombie = false) => ({ kind: 'present' as const, startTicks, zombie });

  const cases: [string, AttemptReceipts, Parameters<typeof classifyAttempt>[1], string][] = [
    ['claimed, never started', { claim }, { bootId, observation: undefined }, 'lost'],
    ['started and completed', { claim, start, completion }, { bootId, observation: { kind: 'absent' } }, 'settled'],
    ['completed although the pid is alive', { claim, start, completion }, { bootId, observation: present('1000') }, 'settled'],
    ['still running, same identity', { claim, start }, { bootId, observation: present('1000') }, 'running'],
    ['pid absent, no receipt', { claim, start }, { bootId, observation: { kind: 'absent' } }, 'needs_attention:process-gone'],
    ['pid reused by another process', { claim, start }, { bootId, observation: present('2000') }, 'needs_attention:process-gone'],
    ['exited, not yet reaped', { claim, start }, { bootId, observation: present('1000', true) }, 'needs_attention:process-gone'],
    ['machine rebooted', { claim, start }, { bootId: 'boot-b', observation: present('1000') }, 'needs_attention:process-gone'],
    ['boot id unreadable now', { claim, start }, { bootId: undefined, observation: present('1000') }, 'needs_attention:identity-unverifiable'],
    ['/proc unreadable now', { claim, start }, { bootId, observation: { kind: 'unverifiable', reason: 'EACCES' } }, 'needs_attention:identity-unverifiable'],
    ['stopped unfinished at a shutdown', { claim, start, completion: { invocationId: 'i', exitCode: null, signal: 'SIGTERM', outputError: 'ended by SIGTERM', stderrTail: '', endedAt: 3, stopIntent: 'shutdown' } }, { bootId, observation: { kind: 'absent' } }, 'needs_attention:stopped-at-shutdown'],
    ['finished its work during a shutdown', { claim, start, completion: { ...completion, stopIntent: 'shutdown' } }, { bootId, observation: { kind: 'absent' } }, 'settled'],
    ['identity never recorded', { claim, start: { invocationId: 'i', pid: 4242, startedAt: 2 } }, { bootId, observation: present('1000') }, 'needs_attention:identity-unverifiable'],
  ];
  for (const [name, attempt, now, expected] of cases) {
    it(name, () => {
      const result = classifyAttempt(attempt, now);
      expect(result.state === 'needs_attention' ? `${result.state}:${result.reason}` : result.state).toBe(expected);
      expect(result.invocationId).toBe('i');
      if (result.state === 'settled') expect(result.completion).toEqual(attempt.completion);
    });
  }

  it('an idempotent attempt whose process is gone still needs attention; the flag is reported', () => {
    const result = classifyAttempt({ claim: { ...claim, idempotent: true }, start }, { bootId, observation: { kind: 'absent' } });
    expect(result).toMatchObject({ state: 'needs_attention', idempotent: true });
  });

  it('observes real processes: running while alive, needs_attention once killed', async () => {
    const dir = tempDir();
    const receipts = receiptLog(dir);
    const launcher = new LocalToolLauncher({ tools, receipts });
    const attempt = launcher.start('live', 'sleep', {});
    receipts.claim('never', 'echo', false);
    await launcher.start('done', 'fail', {}).result;
    const states = () => Object.fromEntries(recoverAttempts(receipts.all()).map((r) => [r.invocationId, r.state]));
    expect(states()).toEqual({ live: 'running', never: 'lost', done: 'settled' });
    // A process that is not ours, from the host's point of view: same pid, other start ticks.
    const other = spawn(node, [toolScript, 'sleep'], { stdio: 'ignore' });
    const ticks = parseProcStat(fs.readFileSync(`/proc/${other.pid}/stat`, 'utf8'))!.startTicks;
    const forged = recoverAttempts([{ claim, start: { ...start, pid: other.pid!, identity: { pid: other.pid!, startTicks: `${ticks}1`, bootId: readBootId()! } } }]);
    expect(forged[0]).toMatchObject({ state: 'needs_attention', reason: 'process-gone' });
    other.kill('SIGKILL');
    // Kill the tool behind the launcher's back, as a crash of the host would leave it; keep the
    // completion receipt out of the log by looking at the receipts as they were before it.
    const before = structuredClone(receipts.all());
    process.kill(attempt.pid!, 'SIGKILL');
    await attempt.result;
    expect(recoverAttempts(before).find((r) => r.invocationId === 'live')).toMatchObject({
      state: 'needs_attention',
      reason: 'process-gone',
    });
  });
});

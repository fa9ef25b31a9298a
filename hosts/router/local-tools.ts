/**
 * Local tools: fixed, named commands declared by the host module, never a shell string.
 *
 *   const tools = { 'thumb': { executable: '/usr/bin/convert', args: ['{{input.src}}', '-resize', '64x64', '{{input.dst}}'], timeoutMs: 10_000 } };
 *
 * Call order of one attempt (`LocalToolLauncher.start`):
 *   1. render the argument templates from the JSON input (refused: `tool.bad-input`);
 *   2. durable `claimed` receipt;
 *   3. `spawn(executable, args, { shell: false })` in a new process group;
 *   4. synchronously, before anything else runs: read the identity (pid, /proc start ticks, boot
 *      id) and write the durable `started` receipt; its time is the attempt's `startedAt`;
 *   5. on exit: durable `completed` receipt (exit code/signal, stdout parsed as JSON, stderr tail).
 * A crash between 2 and 4 leaves a claim without a start (`lost` on recovery). The fork itself
 * happens inside step 3, so a crash in the microseconds between the fork and step 4 is the one
 * window in which a process may exist without a `started` receipt.
 *
 * `stopAll(intent)` freezes the launcher, records a `stopping` receipt per process, sends SIGTERM
 * to its process group, waits `stopGraceMs`, then SIGKILL, and returns every completion receipt.
 * `shutdown()` freezes it too, but first lets every process run `stopGraceMs` to end on its own
 * (an ordinary completion), and stops only those still running then (intent `shutdown`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { assertPortableId, StoreError } from '../core/store.js';
import { toolArgBytesMax, toolArgsMax, toolStderrTailBytes, toolStdoutBytesMax, toolStopGraceMs, toolTimeoutMsMax } from './limits.js';
import { identifyProcess } from '../shared/process-identity.js';
import type { ClaimOrigin, CompletionReceipt, ReceiptLog, StartReceipt } from './receipt-log.js';
import { CodedError } from '../../engine/protocol/coded-error.js';

export { classifyAttempt, recoverAttempts, type AttemptRecovery, type ObservedNow } from './attempt-recovery.js';

export interface LocalToolSpec {
  /** Absolute path of the program; no PATH lookup, no shell. */
  executable: string;
  /** Argument templates; `{{input.a.b}}` is replaced by that scalar of the tool's JSON input. */
  args: readonly string[];
  timeoutMs: number;
  /** Running the tool twice has the effect of running it once (recorded in the claim). */
  idempotent?: boolean;
  /** The whole environment of the process (nothing is inherited); empty when absent. */
  env?: Readonly<Record<string, string>>;
  /** Working directory; the launcher's `cwd` when absent. */
  cwd?: string;
}

export type LocalToolTable = Readonly<Record<string, LocalToolSpec>>;

export type LocalToolErrorCode = 'tool.bad-declaration' | 'tool.unknown' | 'tool.bad-input' | 'tool.stopped';

export class LocalToolError extends CodedError {
  declare readonly code: LocalToolErrorCode;

  constructor(code: LocalToolErrorCode, message: string) {
    super(code, message);
    this.name = 'LocalToolError';
  }
}

export interface LocalToolAttempt {
  invocationId: string;
  pid: number | undefined;
  /** The `started` receipt; absent when the program could not be started at all. */
  start: StartReceipt | undefined;
  /** Settles with the durable completion receipt. */
  result: Promise<CompletionReceipt>;
}

export interface LocalToolLauncherOptions {
  tools: LocalToolTable;
  receipts: ReceiptLog;
  /** Grace between SIGTERM and SIGKILL. */
  stopGraceMs?: number;
  cwd?: string;
}

/** Environment variable that carries the attempt's invocation id to the process. */
export const invocationIdEnv = 'AGENT_WORKFLOW_INVOCATION_ID';

const placeholder = /\{\{\s*input((?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;

/** Checks a tool table; throws `tool.bad-declaration` with the first problem. */
export function validateToolTable(tools: LocalToolTable): void {
  for (const [name, spec] of Object.entries(tools)) {
    const bad = (why: string): never => {
      throw new LocalToolError('tool.bad-declaration', `tool ${JSON.stringify(name)}: ${why}`);
    };
    try {
      assertPortableId(name, 'tool name');
    } catch (error) {
      bad((error as Error).message);
    }
    if (typeof spec.executable !== 'string' || !path.isAbsolute(spec.executable) || spec.executable.includes('\0')) {
      bad(`executable must be an absolute path, not ${JSON.stringify(spec.executable)}`);
    }
    if (!Array.isArray(spec.args) || spec.args.length > toolArgsMax || spec.args.some((a) => typeof a !== 'string' || a.includes('\0'))) {
      bad(`args must be at most ${toolArgsMax} strings without NUL`);
    }
    if (!Number.isInteger(spec.timeoutMs) || spec.timeoutMs <= 0 || spec.timeoutMs > toolTimeoutMsMax) {
      bad(`timeoutMs must be an integer in 1..${toolTimeoutMsMax}`);
    }
  }
}

/**
 * Renders argument templates. Each placeholder takes a string, number or boolean of the input;
 * a missing or structured value, a NUL, or an over-long result is refused. A placeholder that
 * makes up a whole argument may not yield a string starting with `-`, so input cannot turn
 * into an option (declare `--opt={{input.x}}` to pass such values on purpose).
 */
export function renderArgs(templates: readonly string[], input: unknown): string[] {
  return templates.map((template) => {
    const whole = /^\{\{[^}]*\}\}$/.test(template.trim());
    const arg = template.replace(placeholder, (_all, dotted: string) => {
      const keys = dotted.split('.').slice(1);
      let value: unknown = input;
      for (const key of keys) {
        value = value !== null && typeof value === 'object' && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
      }
      if (typeof value === 'number' && Number.isFinite(value)) return String(value);
      if (typeof value === 'boolean') return String(value);
      if (typeof value !== 'string') {
        throw new LocalToolError('tool.bad-input', `input${dotted} is ${value === undefined ? 'missing' : 'not a string, number or boolean'}`);
      }
      if (whole && value.startsWith('-')) throw new LocalToolError('tool.bad-input', `input${dotted} may not start with "-"`);
      return value;
    });
    if (arg.includes('\0') || Buffer.byteLength(arg) > toolArgBytesMax) {
      throw new LocalToolError('tool.bad-input', `argument holds NUL or exceeds toolArgBytesMax (${toolArgBytesMax})`);
    }
    return arg;
  });
}

interface Running {
  invocationId: string;
  child: ChildProcess;
  pid: number;
  stopIntent?: string;
  ended: Promise<CompletionReceipt>;
}

export class LocalToolLauncher {
  private readonly running = new Map<string, Running>();
  private stopped: Promise<CompletionReceipt[]> | undefined;
  private readonly graceMs: number;

  constructor(private readonly options: LocalToolLauncherOptions) {
    validateToolTable(options.tools);
    this.graceMs = options.stopGraceMs ?? toolStopGraceMs;
  }

  /** Number of processes started and not yet settled. */
  get inFlight(): number {
    return this.running.size;
  }

  /** `origin`: the run that asked and its committed seq, recorded in the claim. */
  start(invocationId: string, toolName: string, input: unknown, origin?: ClaimOrigin): LocalToolAttempt {
    if (this.stopped) throw new LocalToolError('tool.stopped', 'the launcher is stopping; no attempt starts');
    assertPortableId(invocationId, 'invocation id');
    const spec = Object.hasOwn(this.options.tools, toolName) ? this.options.tools[toolName] : undefined;
    if (!spec) throw new LocalToolError('tool.unknown', `no local tool named ${JSON.stringify(toolName)}`);
    const args = renderArgs(spec.args, input);
    const receipts = this.options.receipts;
    receipts.claim(invocationId, toolName, spec.idempotent === true, origin);

    const child = spawn(spec.executable, args, {
      shell: false,
      detached: true, // its own process group, so a stop reaches whatever it started
      stdio: ['ignore', 'pipe', 'pipe'],
      // The invocation id is the tool's idempotency key; it is the same across a reissue.
      env: { ...(spec.env ?? {}), [invocationIdEnv]: invocationId },
      cwd: spec.cwd ?? this.options.cwd ?? process.cwd(),
    });
    const pid = child.pid;
    // No await before this point: the started receipt is written while the child is at most a
    // zombie, so its /proc entry is still there to be read.
    const start = pid === undefined ? undefined : receipts.started(invocationId, pid, identifyProcess(pid));

    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stdoutOverflow = false;
    let stderrTail = Buffer.alloc(0);
    child.stdout?.on('data', (chunk: Buffer) => {
      if (stdoutBytes + chunk.length > toolStdoutBytesMax) stdoutOverflow = true;
      else stdout.push(chunk);
      stdoutBytes += chunk.length;
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderrTail = Buffer.concat([stderrTail, chunk]);
      if (stderrTail.length > toolStderrTailBytes) stderrTail = stderrTail.subarray(stderrTail.length - toolStderrTailBytes);
    });

    const entry: Partial<Running> & { invocationId: string; child: ChildProcess } = { invocationId, child };
    const ended = new Promise<CompletionReceipt>((resolve, reject) => {
      let spawnError: Error | undefined;
      const timer = setTimeout(() => {
        if (pid !== undefined && !entry.stopIntent) this.terminate(entry as Running, 'timeout');
      }, spec.timeoutMs);
      timer.unref();
      let finished = false;
      const finish = (exitCode: number | null, signal: string | null): void => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        this.running.delete(invocationId);
        const text = Buffer.concat(stdout).toString('utf8');
        let output: unknown;
        let outputError: string | undefined;
        if (spawnError) outputError = `spawn failed: ${spawnError.message}`;
        else if (exitCode !== 0) outputError = signal ? `ended by ${signal}` : `exit code ${exitCode}`;
        else if (stdoutOverflow) outputError = `stdout exceeds toolStdoutBytesMax (${toolStdoutBytesMax})`;
        else {
          try {
            output = JSON.parse(text);
          } catch {
            outputError = 'stdout is not JSON';
          }
        }
        try {
          resolve(
            receipts.completed({
              invocationId,
              exitCode,
              signal,
              ...(output !== undefined ? { output } : {}),
              ...(outputError !== undefined ? { outputError } : {}),
              stderrTail: stderrTail.toString('utf8'),
              ...(entry.stopIntent !== undefined ? { stopIntent: entry.stopIntent } : {}),
            }),
          );
        } catch (error) {
          reject(error instanceof StoreError ? error : new StoreError('store.io', String(error)));
        }
      };
      child.on('error', (error) => {
        spawnError = error;
        if (pid === undefined) finish(null, null);
      });
      child.on('close', (code, signal) => finish(code, signal));
    });
    if (pid !== undefined) {
      Object.assign(entry, { pid, ended });
      this.running.set(invocationId, entry as Running);
    }
    return { invocationId, pid, start, result: ended };
  }

  /** Whether a process of this invocation is running. */
  isRunning(invocationId: string): boolean {
    return this.running.has(invocationId);
  }

  /**
   * Stops one process exactly (a cancellation): `stopping` receipt, SIGTERM to its group,
   * grace, SIGKILL. Resolves with its completion receipt; `undefined` when nothing runs.
   */
  stop(invocationId: string, intent: string): Promise<CompletionReceipt> | undefined {
    const run = this.running.get(invocationId);
    return run ? this.terminate(run, intent) : undefined;
  }

  /**
   * Freezes the launcher and stops every process exactly: `stopping` receipt, SIGTERM to its
   * group, `stopGraceMs` of grace, SIGKILL. Resolves with the completion receipts of the
   * processes it stopped. Concurrent calls share one promise.
   */
  stopAll(intent: string): Promise<CompletionReceipt[]> {
    this.stopped ??= Promise.all([...this.running.values()].map((r) => this.terminate(r, intent)));
    return this.stopped;
  }

  /**
   * A graceful stop: freezes the launcher (no attempt starts any more), gives every running
   * process `stopGraceMs` to end on its own — its completion is ordinary, its result counts — and
   * stops exactly (intent `shutdown`) those still running at the deadline. Resolves with the
   * completion receipts; shares one promise with `stopAll`.
   */
  shutdown(): Promise<CompletionReceipt[]> {
    this.stopped ??= (async () => {
      const runs = [...this.running.values()];
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.allSettled(runs.map((r) => r.ended)), new Promise((resolve) => (timer = setTimeout(resolve, this.graceMs)))]);
      clearTimeout(timer);
      return Promise.all(runs.map((r) => (this.running.has(r.invocationId) ? this.terminate(r, 'shutdown') : r.ended)));
    })();
    return this.stopped;
  }

  private terminate(run: Running, intent: string): Promise<CompletionReceipt> {
    if (run.stopIntent === undefined) {
      run.stopIntent = intent;
      this.options.receipts.stopping(run.invocationId, intent);
      signalGroup(run.pid, 'SIGTERM');
      let settled = false;
      const grace = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.graceMs);
        const onEnd = (): void => {
          settled = true;
          clearTimeout(timer);
          resolve();
        };
        run.ended.then(onEnd, onEnd);
      });
      void grace.then(() => {
        if (!settled) signalGroup(run.pid, 'SIGKILL');
      });
    }
    return run.ended;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal); // the group is gone; the leader may not be
    } catch {
      // Already ended: its 'close' event settles the attempt.
    }
  }
}

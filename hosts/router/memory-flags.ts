/**
 * Node flags that keep a router inside its memory budget, and the re-execution that applies
 * them when the process was started without. Measured (docs/router.md): V8's optimizing wasm
 * tier pushes the peak RSS to 150–170 MB after thousands of engine calls; Liftoff only keeps it
 * near 100 MB. A small young generation and a capped old space bound the JS heap; `--expose-gc`
 * lets the router collect the buffers its commits leave before V8 would (external-memory.ts).
 */
import { spawn } from 'node:child_process';

export const routerNodeFlags: readonly string[] = ['--liftoff-only', '--max-semi-space-size=2', '--max-old-space-size=80', '--expose-gc'];

/** Set in the re-executed child so that it never re-executes again, whatever its flags. */
export const reexecEnv = 'AGENT_WORKFLOW_ROUTER_REEXEC';

/**
 * Names, in the re-executed child, the file descriptor of a pipe to the wrapper. The wrapper never
 * writes to it; when the wrapper dies, even by SIGKILL (which it cannot forward), the kernel
 * closes its end and the child reads end-of-file: it stops in order, as on SIGTERM, and releases
 * the state directory instead of holding it for a router nobody can signal any more.
 */
export const parentPipeEnv = 'AGENT_WORKFLOW_ROUTER_PARENT_FD';
const parentPipeFd = 3;

const flagName = (flag: string) => flag.split('=')[0];

/** The memory flags missing from `execArgv` (a flag given with another value counts as present). */
export function missingFlags(execArgv: readonly string[]): string[] {
  const present = new Set(execArgv.map(flagName));
  return routerNodeFlags.filter((f) => !present.has(flagName(f)));
}

export function needsReexec(execArgv: readonly string[] = process.execArgv, env: NodeJS.ProcessEnv = process.env): boolean {
  return env[reexecEnv] !== '1' && missingFlags(execArgv).length > 0;
}

const forwarded: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGUSR2'];

/**
 * Runs this same script again with the memory flags, forwards signals to it and resolves with
 * its exit code (128 + signal number when it was killed by a signal).
 */
export function reexecWithMemoryFlags(): Promise<number> {
  const args = [...missingFlags(process.execArgv), ...process.execArgv, process.argv[1], ...process.argv.slice(2)];
  const child = spawn(process.execPath, args, { stdio: ['inherit', 'inherit', 'inherit', 'pipe'], env: { ...process.env, [reexecEnv]: '1', [parentPipeEnv]: String(parentPipeFd) } });
  const handlers = forwarded.map((signal) => {
    const handler = () => {
      child.kill(signal);
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return new Promise((resolve) => {
    const done = (code: number) => {
      for (const [signal, handler] of handlers) process.off(signal, handler);
      resolve(code);
    };
    child.on('error', (err) => {
      process.stderr.write(`agent-workflow router: cannot re-execute with memory flags: ${err.message}\n`);
      done(70);
    });
    child.on('exit', (code, signal) => done(code ?? (signal ? 128 + (signalNumbers[signal] ?? 1) : 70)));
  });
}

const signalNumbers: Partial<Record<string, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGUSR2: 12, SIGTERM: 15 };

/**
 * In a re-executed router: resolves when the wrapper that started it is gone (its pipe closed).
 * Never resolves in a router started directly with the memory flags.
 */
export async function parentExited(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const fd = Number(env[parentPipeEnv]);
  if (!Number.isInteger(fd) || fd < 3) return new Promise<string>(() => undefined);
  const { Socket } = await import('node:net');
  return new Promise((resolve) => {
    const pipe = new Socket({ fd, readable: true, writable: false });
    pipe.unref(); // watching the wrapper never keeps the router alive by itself
    pipe.on('data', () => undefined);
    const gone = () => resolve('parent exited');
    pipe.once('end', gone);
    pipe.once('close', gone);
    pipe.once('error', gone);
  });
}

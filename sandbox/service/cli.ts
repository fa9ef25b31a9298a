/**
 * `agent-workflow sandbox serve`: runs the evaluation service until SIGINT or
 * SIGTERM. Prints the URL on stdout once listening.
 *
 *   --port N            (default 0: any free port)
 *   --host H            (default 127.0.0.1)
 *   --token-file PATH   (else AGENT_WORKFLOW_SANDBOX_TOKEN)
 *   --insecure-no-auth  (loopback only)
 *   --workers N
 *   --queue N
 *   --rss-max-mb N      (RSS cap: split into per-worker memory budgets, see docs/sandbox.md)
 */
import { startSandboxService, type SandboxServiceOptions } from './server.js';

const usage =
  'usage: agent-workflow sandbox serve [--port N] [--host H] [--token-file PATH] [--insecure-no-auth] [--workers N] [--queue N] [--rss-max-mb N]';

/** Returns the process exit code: 0 after a clean shutdown, 2 for bad arguments, 1 when the service cannot start. */
export async function runSandboxServeCommand(argv: string[]): Promise<number> {
  const parsed = parseServeArgs(argv);
  if (typeof parsed === 'string') {
    process.stderr.write(`${parsed}\n${usage}\n`);
    return 2;
  }
  let service;
  try {
    service = await startSandboxService(parsed);
  } catch (e) {
    process.stderr.write(`sandbox serve: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
  process.stdout.write(`${service.url}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await service.close();
  return 0;
}

/** Parses the flags; returns an error message for bad input. */
export function parseServeArgs(argv: string[]): SandboxServiceOptions | string {
  const options: SandboxServiceOptions = {};
  const int = (flag: string, value: string | undefined, min: number): number | string => {
    const n = Number(value);
    return value !== undefined && Number.isInteger(n) && n >= min ? n : `${flag} needs an integer >= ${min}`;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const next = () => inline ?? argv[++i];
    switch (flag) {
      case '--port': {
        const n = int(flag, next(), 0);
        if (typeof n === 'string') return n;
        if (n > 65535) return '--port must be at most 65535';
        options.port = n;
        break;
      }
      case '--host': {
        const h = next();
        if (!h) return '--host needs a value';
        options.host = h;
        break;
      }
      case '--token-file': {
        const f = next();
        if (!f) return '--token-file needs a path';
        options.tokenFile = f;
        break;
      }
      case '--insecure-no-auth':
        if (inline !== undefined) return '--insecure-no-auth takes no value';
        options.insecureNoAuth = true;
        break;
      case '--workers': {
        const n = int(flag, next(), 1);
        if (typeof n === 'string') return n;
        options.workers = n;
        break;
      }
      case '--queue': {
        const n = int(flag, next(), 0);
        if (typeof n === 'string') return n;
        options.queueLength = n;
        break;
      }
      case '--rss-max-mb': {
        const n = int(flag, next(), 1);
        if (typeof n === 'string') return n;
        options.rssBytesMax = n * 1024 * 1024;
        break;
      }
      default:
        return `unknown argument '${arg}'`;
    }
  }
  return options;
}

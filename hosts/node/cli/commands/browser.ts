// `agent-workflow replay-web <run-id|export.json>`: serves the browser replay page on 127.0.0.1
// with the run's export preloaded, prints the URL, and runs until interrupted. The page replays
// the run with the same engine component in the browser; nothing is executed here.
import { existsSync, readFileSync } from 'node:fs';
import type { ParsedArgs } from '../args.js';
import { integerOption, optionString, UsageError } from '../args.js';
import { cliLimits } from '../../limits.js';
import { CliError, type CliCommand } from '../command.js';
import { withRuntime } from '../host-module.js';
import { cliApiVersion } from '../output.js';

/** The export's text: the file when `target` names one, else the run `target` read from the store. */
async function exportTextOf(args: ParsedArgs, target: string): Promise<string> {
  if (existsSync(target)) return readFileSync(target, 'utf8');
  // The same runtime as every command's: the host module, --dir, --store and the environment.
  return withRuntime(args, async (rt) => `${JSON.stringify(await rt.exportRun(target))}\n`);
}

/** Resolves when the process is asked to stop (Ctrl-C, SIGTERM). */
function untilStopped(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

export async function runReplayWeb(args: ParsedArgs): Promise<number> {
  const target = args.positional[0] ?? optionString(args, 'from');
  if (!target) throw new UsageError('usage: agent-workflow replay-web <run-id|export.json> [--port N] [--host 127.0.0.1]');
  const port = integerOption(args, 'port', { min: 0, max: cliLimits.portMax }) ?? 0;
  const { serveReplay } = await import('../../../browser/serve.js');
  const { parseExportText } = await import('../../../browser/journal.js');
  const text = await exportTextOf(args, target);
  try {
    parseExportText(text);
  } catch (err) {
    throw new CliError((err as { code?: string }).code ?? 'export.bad-format', `${target}: ${(err as Error).message}`);
  }
  const server = await serveReplay({ exportText: text, port, host: optionString(args, 'host') ?? '127.0.0.1' });
  process.stdout.write(`${JSON.stringify({ apiVersion: cliApiVersion, kind: 'ReplayServer', url: server.url, origin: server.origin })}\n`);
  process.stderr.write(`replay page: ${server.url}  (Ctrl-C to stop)\n`);
  await untilStopped();
  await server.close();
  return 0;
}

export const browserCommands: Record<string, CliCommand> = {
  'replay-web': { flags: [], run: runReplayWeb },
};

// The shape of a CLI command; each file in commands/ exports a record of them.
import type { ParsedArgs } from './args.js';

export interface CliCommand {
  /** Options that take no value. */
  flags: string[];
  run(args: ParsedArgs): Promise<number>;
}

/** An error the CLI reports with its code (a plain object would do; a class keeps stacks). */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly detail?: unknown,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

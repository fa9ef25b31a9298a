// The shape of a CLI command; each file in commands/ exports a record of them.
import type { ParsedArgs } from './args.js';
import { CodedError } from '../../../engine/protocol/coded-error.js';

export interface CliCommand {
  /** Options that take no value. */
  flags: string[];
  run(args: ParsedArgs): Promise<number>;
}

/** An error the CLI reports with its code (a plain object would do; a class keeps stacks). */
export class CliError extends CodedError {
  constructor(code: string, message: string, detail?: unknown) {
    super(code, message, detail);
    this.name = 'CliError';
  }
}

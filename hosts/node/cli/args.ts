// A small argument parser: positional arguments and `--name value` / `--flag` options.
import { CodedError } from '../../../engine/protocol/coded-error.js';
export interface ParsedArgs {
  positional: string[];
  options: Map<string, string | true>;
}

export class UsageError extends CodedError {
  constructor(message: string) {
    super('cli.usage', message);
  }
}

export function parseArgs(argv: string[], flags: readonly string[]): ParsedArgs {
  const positional: string[] = [];
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq > 0 ? arg.slice(2, eq) : arg.slice(2);
      if (eq > 0) options.set(name, arg.slice(eq + 1));
      else if (flags.includes(name)) options.set(name, true);
      else {
        const value = argv[i + 1];
        if (value === undefined || value.startsWith('--')) throw new UsageError(`option --${name} needs a value`);
        options.set(name, value);
        i++;
      }
    } else positional.push(arg);
  }
  return { positional, options };
}

export function optionString(args: ParsedArgs, name: string): string | undefined {
  const v = args.options.get(name);
  if (v === true) throw new UsageError(`option --${name} needs a value`);
  return v;
}

/**
 * A whole-number option within `[min, max]`, or `undefined` when absent. Anything else — a sign,
 * a fraction, an exponent, leading zeros, text, a number out of range — is a usage error, so a
 * mistyped bound never reaches a store (where it failed as a type mismatch) or is clamped
 * silently.
 */
export function integerOption(args: ParsedArgs, name: string, bounds: { min: number; max: number }): number | undefined {
  const text = optionString(args, name);
  if (text === undefined) return undefined;
  const value = /^(0|[1-9][0-9]{0,15})$/.test(text) ? Number(text) : NaN;
  if (!(value >= bounds.min && value <= bounds.max)) throw new UsageError(`--${name} takes a whole number from ${bounds.min} to ${bounds.max}, got ${JSON.stringify(text)}`);
  return value;
}

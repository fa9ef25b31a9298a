// The router host's diagnostics: one line per message on stderr, filtered by level. Logs are a
// projection; nothing is decided from them.
import type { HostLog } from '../core/types.js';

const order = { debug: 0, info: 1, warn: 2, error: 3 } as const;

export type LogLevel = keyof typeof order;

export function stderrLog(minimum: LogLevel = 'warn'): HostLog {
  return (level, message) => {
    if (order[level] >= order[minimum]) process.stderr.write(`agent-workflow router ${level}: ${message}\n`);
  };
}

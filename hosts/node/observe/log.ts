// The Node host's diagnostics: one line per message on stderr, filtered by level.
import type { HostLog } from '../../core/types.js';

const order = { debug: 0, info: 1, warn: 2, error: 3 } as const;

export function stderrLog(minimum: keyof typeof order = 'warn'): HostLog {
  return (level, message) => {
    if (order[level] >= order[minimum]) process.stderr.write(`agent-workflow ${level}: ${message}\n`);
  };
}

// The browser host's diagnostics: the console, filtered by level, and an optional sink the page
// shows. Never a source of facts.
import type { HostLog } from '../core/types.js';

const order = { debug: 0, info: 1, warn: 2, error: 3 } as const;

export type LogLevel = keyof typeof order;

export function consoleLog(minimum: LogLevel = 'warn', sink?: (level: LogLevel, message: string) => void): HostLog {
  return (level, message) => {
    if (order[level] < order[minimum]) return;
    sink?.(level, message);
    const line = `agent-workflow ${level}: ${message}`;
    if (level === 'error') console.error(line);
    else if (level === 'warn') console.warn(line);
    else console.log(line);
  };
}

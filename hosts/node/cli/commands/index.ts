// Commands defined outside main.ts, merged into the CLI. One import per command module.
import type { CliCommand } from '../command.js';
import { routerCommands } from './router.js';

export const extraCommands: Record<string, CliCommand> = { ...routerCommands };
Object.assign(extraCommands, (await import('./catalog.js')).catalogCommands);
Object.assign(extraCommands, (await import('./browser.js')).browserCommands);
Object.assign(extraCommands, (await import('./deliveries.js')).deliveriesCommands);
Object.assign(extraCommands, (await import('./triggers.js')).triggerCommands);

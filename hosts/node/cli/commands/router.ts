// `agent-workflow router start …`: the router host. Loaded on demand, so the router path never
// loads the Node host's SQLite store, HTTP server or MCP code.
import { hostCommands } from '../../../shared/host-commands.js';
import type { CliCommand } from '../command.js';

export const routerCommands: Record<string, CliCommand> = {
  router: {
    flags: ['until-idle', 'accept-loss', 'retry'],
    async run(args) {
      const options = [...args.options].flatMap(([name, value]) => (value === true ? [`--${name}`] : [`--${name}`, value]));
      return hostCommands.router([...args.positional, ...options]);
    },
  },
};

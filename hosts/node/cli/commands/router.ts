// `agent-workflow router start …`: the router host. Loaded on demand, so the router path never
// loads the Node host's SQLite store, HTTP server or MCP code.
import type { CliCommand } from '../command.js';

export const routerCommands: Record<string, CliCommand> = {
  router: {
    flags: ['until-idle'],
    async run(args) {
      const { runRouterCommand } = await import('../../../router/cli.js');
      const options = [...args.options].flatMap(([name, value]) => (value === true ? [`--${name}`] : [`--${name}`, value]));
      return runRouterCommand([...args.positional, ...options]);
    },
  },
};

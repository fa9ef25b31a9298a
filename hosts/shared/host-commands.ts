// Command lines of the hosts that the package's one binary (`agent-workflow`) can start besides
// its own. Each entry is loaded on demand, so the Node CLI never loads a host it does not run and
// the hosts never import one another: `agent-workflow router start …` reaches the router through
// this table.
export const hostCommands = {
  /** `agent-workflow router …`: the router host (Node built-ins, the engine and QuickJS only). */
  router: async (argv: readonly string[]): Promise<number> => (await import('../router/cli.js')).runRouterCommand(argv),
} as const;

// The package's version, as package.json says it (a test keeps the two equal): what the MCP
// gateway and `agent-workflow --version` report. The engine's own version (engine/version.ts) is
// the protocol's, pinned in every plan, and moves only when the engine's decisions do.
export const packageVersion = '0.9.0';

/** Node-only API of the script evaluation service (server, client, CLI verb). */
export { planMemoryBudget, startSandboxService, ServiceConfigError, type MemoryBudget, type SandboxService, type SandboxServiceOptions } from './server.js';
export { createRemoteEvaluator, RemoteEvaluatorError, type RemoteEvaluator, type RemoteEvaluatorOptions } from './client.js';
export { runSandboxServeCommand, parseServeArgs } from './cli.js';
export { serviceErrorCodes, type ServiceErrorCode } from './protocol.js';
export { tokenEnvVar } from './auth.js';

// The `@gm-hz/agent-dag-workflow/canvas` entry: the console (the design's Canvas) and the HTTP
// API it reads, served over a runtime this process already has open. `agent-workflow serve --http`
// is this with a worker beside it; docs/console.md says what each page does.
import type { WorkflowRuntime } from './runtime.js';
import { startHttpApi, type HttpApi, type HttpApiOptions } from './observe/http-api.js';

export { startHttpApi, httpToken, httpTokenEnvVar, HttpApiConfigError, type HttpApi, type HttpApiOptions } from './observe/http-api.js';
export type { AccessRole, AccessTokens } from './http/access.js';

export interface CanvasOptions extends Omit<HttpApiOptions, 'console' | 'port'> {
  /** 0 (default) picks a free port. */
  port?: number;
}

/**
 * Serves the console at `<url>/console/` and its API at `<url>/v1/…` over `runtime`, with the same
 * token rules as `serve --http` (an operator token, a read-only token, or loopback without one).
 */
export function startCanvas(runtime: WorkflowRuntime, options: CanvasOptions = {}): Promise<HttpApi> {
  return startHttpApi(runtime, { ...options, port: options.port ?? 0, console: runtime });
}
